"""ZooKeeper 3.4.13 and 3.4.14 (the client of Kafka 2.0 to 2.3) cannot connect on Java 14 and later: mended here.

Their `StaticHostProvider.next` resolves each server address lazily (ZOOKEEPER-2184, new in 3.4.13), taking the
host of an unresolved address from `InetSocketAddress.toString()` cut at its last ':' (`getHostString`, written
for Java 6). Java 14 changed that string to `host/<unresolved>:port` (JDK-8225499), so the client looks up
`172.29.0.2/<unresolved>`, fails, connects to the unresolved address and gets `UnresolvedAddressException` on
every try; the broker logs `Opening socket connection to server 172.29.0.2/<unresolved>:2181` until
`ZooKeeperClientTimeoutException: Timed out waiting for connection while in state: CONNECTING` ends it. The only
JRE here is openjdk-17. ZooKeeper 3.5.8 and 3.6.1 fixed it upstream by asking `InetSocketAddress.getHostString()`
(Java 7+). The mend does the same: it takes that release's own `StaticHostProvider.java` from ZooKeeper's
-sources.jar on Maven Central, replaces the two `toString` lines with `addr.getHostString()`, compiles it against
the release's classpath, and puts the classes back into a copy of the jar, renamed `zookeeper-V-jdk14host.jar`, so
the broker image's tag (a hash of the jar names) says the classpath was mended. Nothing else of the release
changes; ZooKeeper 3.4.10 (Kafka 1.1) resolves eagerly and works unmended, 3.5+ has the fix.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from kafka_chaos.base.errors import EnvironmentProblem

AFFECTED = ("3.4.13", "3.4.14")
SOURCE = "org/apache/zookeeper/client/StaticHostProvider.java"
CLASS_PREFIX = "org/apache/zookeeper/client/StaticHostProvider"
SUFFIX = "-jdk14host"
BROKEN = re.compile(r"String addrString = addr\.toString\(\);\s*"
                    r"hostString = addrString\.substring\(0, addrString\.lastIndexOf\(':'\)\);")
MENDED = "hostString = addr.getHostString();   // kafka-chaos: Java 14+ toString is host/<unresolved>:port"


def affected_jar(libs: Path) -> Path | None:
    """The unmended ZooKeeper 3.4.13/3.4.14 jar in `libs`, if there is one."""
    for version in AFFECTED:
        jar = libs / f"zookeeper-{version}.jar"
        if jar.exists():
            return jar
    return None


def mended_source(text: str) -> str:
    """StaticHostProvider.java with getHostString's unresolved branch asking getHostString(); ValueError when the
    source does not have the broken lines (another ZooKeeper release: do not guess)."""
    mended, n = BROKEN.subn(MENDED, text)
    if n != 1:
        raise ValueError("StaticHostProvider.java does not take the host from toString(): not the 3.4.13 code")
    return mended


def mend(libs: Path, fetch_sources) -> bool:
    """Mend the ZooKeeper client in `libs` in place if it is an affected one; True if it did.
    `fetch_sources(version)` returns the path of zookeeper-<version>-sources.jar."""
    jar = affected_jar(libs)
    if jar is None:
        return False
    version = jar.stem.split("-", 1)[1]
    javac = shutil.which("javac")
    if not javac:
        raise EnvironmentProblem(
            f"javac is not on PATH: Kafka's ZooKeeper {version} client needs one class recompiled to run on Java 17",
            "apt-get install -y openjdk-17-jdk-headless")
    with tempfile.TemporaryDirectory(prefix="zk-mend-") as tmp:
        work = Path(tmp)
        with zipfile.ZipFile(fetch_sources(version)) as src:
            text = src.read(SOURCE).decode()
        java = work / "src" / SOURCE
        java.parent.mkdir(parents=True)
        java.write_text(mended_source(text))
        out = work / "classes"
        proc = subprocess.run([javac, "-nowarn", "--release", "8", "-cp", f"{libs}/*", "-d", str(out), str(java)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise EnvironmentProblem(f"compiling ZooKeeper {version}'s mended StaticHostProvider failed: "
                                     f"{(proc.stdout + proc.stderr).strip()[-400:]}", "rerun with -v")
        target = libs / f"zookeeper-{version}{SUFFIX}.jar"
        _replace_classes(jar, target, out)
    jar.unlink()
    return True


def _replace_classes(jar: Path, target: Path, classes: Path) -> None:
    """A copy of `jar` whose StaticHostProvider classes are the ones compiled into `classes`."""
    new = {str(p.relative_to(classes)): p.read_bytes() for p in classes.rglob("*.class")}
    partial = target.with_suffix(".partial")
    with zipfile.ZipFile(jar) as zin, zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            if item.filename.startswith(CLASS_PREFIX) and item.filename.endswith(".class"):
                continue
            zout.writestr(item, zin.read(item.filename))
        for name, data in sorted(new.items()):
            zout.writestr(name, data)
    partial.rename(target)
