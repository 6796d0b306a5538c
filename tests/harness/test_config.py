"""server.properties generation: what each node is told, without starting anything."""
import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.cluster import config as cfg
from kafka_chaos.cluster.config import ClusterConfig

CONTROLLERS = {101: "172.29.9.101"}


def props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.strip().splitlines())


def test_broker_advertises_its_fixed_ip_and_knows_the_static_quorum():
    p = props(cfg.broker_properties(ClusterConfig(), "4.3.1", 2, "172.29.9.12", CONTROLLERS))
    assert p["process.roles"] == "broker"
    assert p["node.id"] == "2"
    assert p["advertised.listeners"] == "PLAINTEXT://172.29.9.12:9092"
    assert p["controller.quorum.voters"] == "101@172.29.9.101:9093"


def test_controller_is_dedicated_and_listens_only_on_the_controller_port():
    p = props(cfg.controller_properties(ClusterConfig(), "4.3.1", 101, CONTROLLERS))
    assert p["process.roles"] == "controller"
    assert p["listeners"] == "CONTROLLER://0.0.0.0:9093"
    assert "advertised.listeners" not in p


def test_scenario_settings_reach_every_node():
    c = ClusterConfig(min_insync_replicas=2, unclean_leader_election=True, replica_lag_time_max_ms=4000,
                      broker_session_timeout_ms=6000, log_flush_interval_messages=1)
    for text in (cfg.broker_properties(c, "4.3.1", 1, "172.29.9.11", CONTROLLERS),
                 cfg.controller_properties(c, "4.3.1", 101, CONTROLLERS)):
        p = props(text)
        assert p["min.insync.replicas"] == "2"
        assert p["unclean.leader.election.enable"] == "true"
        assert p["replica.lag.time.max.ms"] == "4000"
        assert p["broker.session.timeout.ms"] == "6000"
        assert p["log.flush.interval.messages"] == "1"


def test_share_coordinator_settings_only_for_kafka_4():
    assert "share.coordinator.state.topic.replication.factor" in cfg.broker_properties(
        ClusterConfig(), "4.0.0", 1, "a", CONTROLLERS)
    assert "share.coordinator.state.topic.replication.factor" not in cfg.broker_properties(
        ClusterConfig(), "3.9.2", 1, "a", CONTROLLERS)


def test_internal_topics_never_ask_for_more_replicas_than_brokers():
    p = props(cfg.broker_properties(ClusterConfig(brokers=1, min_insync_replicas=1), "4.3.1", 1, "a", CONTROLLERS))
    assert p["offsets.topic.replication.factor"] == "1"
    assert p["transaction.state.log.min.isr"] == "1"


def test_changed_settings_lists_only_departures_from_kafka_defaults():
    changed = ClusterConfig(min_insync_replicas=2).changed_settings()
    assert changed["min.insync.replicas"] == "2"
    assert changed["replica.lag.time.max.ms"] == "10000"
    assert "unclean.leader.election.enable" not in changed
    assert "broker.session.timeout.ms" not in changed


@pytest.mark.parametrize("version,elr,flags", [
    ("4.3.1", True, "--feature eligible.leader.replicas.version=1"),
    ("4.3.1", False, "--feature eligible.leader.replicas.version=0"),
    ("4.3.1", None, ""),
    ("3.9.2", True, ""),          # 3.9 has no ELR: the flag would break format
])
def test_elr_is_a_format_feature_where_the_version_has_it(version, elr, flags):
    assert cfg.format_args(ClusterConfig(elr=elr), version) == flags


def test_elr_defaults_on_from_4_1():
    assert not cfg.elr_default("4.0.2")
    assert cfg.elr_default("4.1.0")


def test_cluster_ids_are_kafka_uuids():
    for _ in range(200):
        cid = cfg.new_cluster_id()
        assert len(cid) == 22 and not cid.startswith("-")


@pytest.mark.parametrize("kwargs", [dict(brokers=0), dict(controllers=2), dict(min_insync_replicas=4),
                                    dict(name="bad name")])
def test_impossible_configs_are_refused_before_anything_starts(kwargs):
    with pytest.raises(UsageError):
        ClusterConfig(**kwargs).validate()


def test_zookeeper_mode_brokers_register_in_zookeeper_and_have_no_kraft_settings():
    from kafka_chaos.cluster.config import ZOOKEEPER_PORT, broker_properties, zookeeper_properties

    c = ClusterConfig(kafka_version="2.8.2", metadata="zookeeper", zookeeper_session_timeout_ms=6000)
    props = dict(line.split("=", 1) for line in broker_properties(c, "2.8.2", 2, "10.0.0.12", {}, "10.0.0.201")
                 .splitlines())
    assert props["broker.id"] == "2" and props["zookeeper.connect"] == f"10.0.0.201:{ZOOKEEPER_PORT}"
    assert not {"process.roles", "node.id", "controller.quorum.voters", "broker.session.timeout.ms"} & set(props)
    assert props["zookeeper.session.timeout.ms"] == "6000"
    assert c.changed_settings()["zookeeper.session.timeout.ms"] == "6000"
    zoo = dict(line.split("=", 1) for line in zookeeper_properties().splitlines())
    assert zoo["clientPort"] == str(ZOOKEEPER_PORT) and int(zoo["maxSessionTimeout"]) >= 18000


@pytest.mark.parametrize("version,asked,mode", [("2.8.2", None, "zookeeper"), ("3.9.2", None, "kraft"),
                                                ("3.9.2", "zookeeper", "zookeeper"), ("4.4.0", None, "kraft"),
                                                ("1.1.1", "zookeeper", "zookeeper")])
def test_metadata_mode_is_kraft_where_the_release_has_it(version, asked, mode):
    from kafka_chaos.cluster.config import metadata_mode

    assert metadata_mode(version, asked) == mode


@pytest.mark.parametrize("version,asked,named", [("4.0.0", "zookeeper", "removed in 4.0"),
                                                 ("2.8.2", "kraft", "KRaft from 3.9")])
def test_a_metadata_mode_the_release_lacks_is_refused(version, asked, named):
    with pytest.raises(UsageError) as e:
        ClusterConfig(kafka_version=version, metadata=asked).validate()
    assert named in e.value.cause and "--metadata" in e.value.remedy


def test_transaction_version_is_a_format_feature_from_4_0():
    assert cfg.format_args(ClusterConfig(transaction_version=1), "4.3.1") == "--feature transaction.version=1"
    assert cfg.format_args(ClusterConfig(elr=True, transaction_version=2), "4.3.1") == \
        "--feature eligible.leader.replicas.version=1 --feature transaction.version=2"
    assert cfg.format_args(ClusterConfig(transaction_version=2), "3.9.2") == ""
    with pytest.raises(UsageError, match="from 4.0"):
        ClusterConfig(transaction_version=2, kafka_version="3.9.2").validate()
