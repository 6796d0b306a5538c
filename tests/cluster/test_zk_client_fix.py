"""Kafka 2.0-2.3's ZooKeeper 3.4.13/3.4.14 client takes an unresolved address's host from toString(), which Java 14
changed to host/<unresolved>:port (JDK-8225499): the mend swaps in getHostString(), and only where that code is."""
import pytest

from kafka_chaos.cluster import zk_client_fix

BROKEN = """    private String getHostString(InetSocketAddress addr) {
        String hostString = "";
        if (addr == null) {
            return hostString;
        }
        if (!addr.isUnresolved()) {
            InetAddress ia = addr.getAddress();
            if (ia != null && ia.getHostName() != null) {
                hostString = ia.getHostName();
            } else {
                hostString = ia.getHostAddress();
            }
        } else {
            // According to the Java 6 documentation, if the hostname is
            // unresolved, then the string before the colon is the hostname.
            String addrString = addr.toString();
            hostString = addrString.substring(0, addrString.lastIndexOf(':'));
        }
        return hostString;
    }
"""


def test_the_broken_branch_asks_get_host_string_and_nothing_else_changes():
    mended = zk_client_fix.mended_source(BROKEN)
    assert "addr.toString()" not in mended and "hostString = addr.getHostString();" in mended
    assert mended.replace(zk_client_fix.MENDED, "").count("hostString = ia.getHostName();") == 1


def test_source_without_the_broken_lines_is_refused_not_guessed():
    with pytest.raises(ValueError):
        zk_client_fix.mended_source(BROKEN.replace("addr.toString()", "addr.getHostString()"))


def test_only_the_3_4_13_and_3_4_14_jars_are_affected(tmp_path):
    for name in ("zookeeper-3.4.10.jar", "zookeeper-3.5.9.jar", "zookeeper-3.4.14-jdk14host.jar"):
        (tmp_path / name).write_bytes(b"")
    assert zk_client_fix.affected_jar(tmp_path) is None
    (tmp_path / "zookeeper-3.4.13.jar").write_bytes(b"")
    assert zk_client_fix.affected_jar(tmp_path) == tmp_path / "zookeeper-3.4.13.jar"
    assert zk_client_fix.mend(tmp_path / "none", lambda v: pytest.fail("fetched")) is False
