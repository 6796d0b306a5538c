"""--broker-config / --topic-config KEY=VALUE: parsed, checked against the flags, carried into the cluster, the
topic, the reproducing command, meta.json and the ISR model. Bad input exits 2 naming cause and remedy."""
import json

import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.checkers.model import FaultEffect, ModelConfig, run_model
from kafka_chaos.cluster.config import ClusterConfig, broker_properties
from kafka_chaos.cluster.settings import parse_settings
from kafka_chaos.harness.cli import main
from kafka_chaos.harness.cluster_options import ClusterChoice
from kafka_chaos.harness.runner import RunOptions
from kafka_chaos.history.meta import HistoryError, RunMeta, load_meta
from kafka_chaos.history.writer import HistoryWriter

S = 1_000_000_000
T0 = 1_000 * S


def test_pairs_parse_into_settings_and_repeat():
    assert parse_settings(["replica.lag.time.max.ms=5000", "log.cleaner.enable = false", "a.b=x=y"],
                          "--broker-config") == {"replica.lag.time.max.ms": "5000", "log.cleaner.enable": "false",
                                                 "a.b": "x=y"}
    assert parse_settings(None, "--topic-config") == {}


@pytest.mark.parametrize("pair, says", [
    ("replica.lag.time.max.ms", "no '='"),
    ("=5", "not a Kafka config name"),
    ("Replica.Lag=5", "not a Kafka config name"),
    ("replica..lag=5", "not a Kafka config name"),
    ("replica.lag.time.max.ms=", "no value"),
    ("node.id=7", "sets this itself"),
])
def test_malformed_pairs_are_refused_with_the_fix(pair, says):
    with pytest.raises(UsageError, match=says) as e:
        parse_settings([pair], "--broker-config")
    assert e.value.remedy


def test_an_unknown_but_well_formed_key_passes_through_to_the_brokers():
    config = ClusterChoice(broker_config={"log.cleaner.enable": "false"}).apply(ClusterConfig())
    assert config.extra_settings == {"log.cleaner.enable": "false"}
    assert "log.cleaner.enable=false" in broker_properties(config, "4.1.0", 1, "10.0.0.2", {101: "10.0.0.3"})


def test_known_broker_settings_land_in_their_fields_and_in_the_changed_settings():
    config = ClusterChoice(broker_config={"replica.lag.time.max.ms": "7000", "log.flush.interval.messages": "1"}) \
        .apply(ClusterConfig())
    assert config.replica_lag_time_max_ms == 7000 and config.log_flush_interval_messages == 1
    assert config.changed_settings()["replica.lag.time.max.ms"] == "7000"
    assert config.changed_settings()["log.flush.interval.messages"] == "1"


@pytest.mark.parametrize("argv, says", [
    (["--broker-config", "replica.lag.time.max.ms=lots"], "whole number"),
    (["--broker-config", "unclean.leader.election.enable=yes"], "true or false"),
    (["--broker-config", "replica.lag.time.max.ms=5000", "--replica-lag-ms", "7000"],
     "replica.lag.time.max.ms=5000 conflicts with --replica-lag-ms 7000"),
    (["--min-isr", "1", "--topic-config", "min.insync.replicas=2"],
     "--topic-config min.insync.replicas=2 conflicts with --min-isr 1"),
    (["--no-unclean", "--broker-config", "unclean.leader.election.enable=true"],
     "unclean.leader.election.enable=true conflicts with --no-unclean"),
    (["--topic-config", "flush.messages=0"], "out of range"),
    (["--broker-config", "broker.id"], "no '='"),
    (["--brokers", "2"], "use --brokers 3"),
])
def test_run_refuses_bad_or_contradictory_settings_with_exit_2_before_any_container(argv, says, capsys):
    assert main(["run", "leader-kill", "--duration", "5", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and "remedy:" in err


def test_cluster_up_refuses_a_conflicting_setting_with_exit_2(capsys):
    assert main(["cluster", "up", "--name", "never", "--min-isr", "1",
                 "--broker-config", "min.insync.replicas=2"]) == 2
    assert "conflicts with --min-isr 1" in capsys.readouterr().err


def test_min_isr_and_unclean_come_from_the_topic_then_the_broker_then_the_default():
    topic_wins = RunOptions("leader-kill", seed=1, topic_config={"min.insync.replicas": "3"},
                            cluster=ClusterChoice(broker_config={"min.insync.replicas": "1"})).resolved()
    assert topic_wins.min_isr == 3
    assert topic_wins.topic_settings()["min.insync.replicas"] == "3"
    assert topic_wins.cluster_config("x").min_insync_replicas == 1          # the broker keeps its own setting
    broker = RunOptions("leader-kill", seed=1, cluster=ClusterChoice(
        broker_config={"unclean.leader.election.enable": "true"})).resolved()
    assert broker.unclean is True and broker.min_isr == 2


def test_the_recorded_command_carries_the_settings_and_cluster_options():
    opts = RunOptions("leader-kill", seed=1, engine="pandas", topic_config={"flush.messages": "1"},
                      cluster=ClusterChoice(brokers=5, elr=False, broker_config={"replica.lag.time.max.ms": "5000"}))
    cmd = opts.resolved().command()
    for part in ("--brokers 5", "--no-elr", "--broker-config replica.lag.time.max.ms=5000",
                 "--topic-config flush.messages=1", "--engine pandas"):
        assert part in cmd


def test_a_reused_cluster_must_already_have_the_settings():
    running = ClusterConfig(name="kept", replica_lag_time_max_ms=5000)
    ClusterChoice(broker_config={"replica.lag.time.max.ms": "5000"}).check_matches(running)
    with pytest.raises(UsageError, match="has replica.lag.time.max.ms=5000, not 7000"):
        ClusterChoice(broker_config={"replica.lag.time.max.ms": "7000"}).check_matches(running)


def a_meta(**kw) -> RunMeta:
    return RunMeta(run_id="r1", partitions=1, replication_factor=3, min_insync_replicas=2, kafka_version="4.1.0",
                   **kw)


def test_the_model_reads_a_custom_replica_lag_time_and_session_timeout_from_meta(tmp_path):
    HistoryWriter.create(tmp_path, "r1", a_meta(broker_settings={"replica.lag.time.max.ms": "12345",
                                                                 "broker.session.timeout.ms": "60000"}))
    config = ModelConfig.from_meta(load_meta(tmp_path / "r1"))
    assert config.replica_lag_time_max_ms == 12345 and config.broker_session_timeout_ms == 60000
    # A follower cut off at 10 s leaves the ISR once it has not caught up for replica.lag.time.max.ms (and is
    # not fenced first: the session timeout is longer); with Kafka's 30 s default, at 40 s.
    cut = [FaultEffect(T0 + 10 * S, "start", "net", (3,), drops=((3, 1), (1, 3), (3, 2), (2, 3)), fault="isolate")]
    assert shrink_time(run_model(config, cut, t_begin=T0, t_end=T0 + 60 * S)) == pytest.approx(22.3 * S, abs=0.2 * S)
    default = ModelConfig.from_meta(a_meta(broker_settings={"broker.session.timeout.ms": "60000"}))
    assert default.replica_lag_time_max_ms == 30_000
    assert shrink_time(run_model(default, cut, t_begin=T0, t_end=T0 + 60 * S)) == pytest.approx(40 * S, abs=0.2 * S)


def shrink_time(model) -> int | None:
    """Seconds (in ns) after T0 when the model first dropped broker 3 from the ISR."""
    return min((e["t_ns"] - T0 for e in model.events if e["event"] == "isr" and 3 not in e["isr"]), default=None)


def test_topic_settings_override_the_brokers_for_unclean_election_and_flush(tmp_path):
    meta = a_meta(broker_settings={"unclean.leader.election.enable": "true", "log.flush.interval.messages": "1000"},
                  topic_settings={"unclean.leader.election.enable": "false", "flush.messages": "1"})
    raw = meta.to_dict()
    del raw["unclean_leader_election"]
    (tmp_path / "meta.json").write_text(json.dumps(raw))
    back = load_meta(tmp_path)
    assert back.unclean_leader_election is False and back.flush_interval_messages == 1
    config = ModelConfig.from_meta(back)
    assert config.unflushed_ns == 0 and not config.unclean_honoured
    assert ModelConfig.from_meta(a_meta(broker_settings={"log.flush.interval.messages": "1"})).unflushed_ns == 0
    timed = a_meta(broker_settings={"log.flush.interval.ms": "1000", "log.flush.scheduler.interval.ms": "500"})
    assert ModelConfig.from_meta(timed).unflushed_ns == 1_500_000_000


def test_a_meta_whose_topic_settings_contradict_its_min_isr_is_refused(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps(a_meta(topic_settings={"min.insync.replicas": "3"}).to_dict()))
    with pytest.raises(HistoryError, match="disagrees with min_insync_replicas 2"):
        load_meta(tmp_path)


def test_with_every_write_flushed_a_power_loss_of_every_replica_loses_nothing():
    timeline = [FaultEffect(T0 + 100 * S, "start", "power_loss", (n,)) for n in (1, 2, 3)] + \
               [FaultEffect(T0 + 110 * S, "heal", "power_loss", (n,)) for n in (1, 2, 3)]

    def model(**kw):
        return run_model(ModelConfig(kafka_version="4.1.0", partitions=1, replication_factor=3, min_insync_replicas=2,
                                     elr_enabled=True, **kw), timeline, t_begin=T0, t_end=T0 + 300 * S)
    assert model().durability(0, T0 + 90 * S, "all")[0] == "at_risk"          # page cache only: gone
    flushed = model(flush_interval_messages=1)
    assert all(flushed.durability(0, T0 + t * S, "all")[0] == "guaranteed" for t in range(0, 300, 5))


def test_run_takes_every_option_cluster_up_takes():
    from kafka_chaos.harness.cli import build_parser

    sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices and "run" in a.choices)
    up = next(a for a in sub.choices["cluster"]._actions if hasattr(a, "choices") and a.choices).choices["up"]

    def flags(p):
        return {f for a in p._actions for f in a.option_strings}
    assert flags(up) - flags(sub.choices["run"]) == set()
    assert {"--brokers", "--controllers", "--image", "--broker-config", "--topic-config"} <= flags(sub.choices["run"])
    assert "--engine" in flags(sub.choices["run"]) and "--engine" in flags(sub.choices["check"])


def test_a_reused_clusters_topic_settings_come_under_the_runs_own():
    opts = RunOptions("leader-kill", seed=1, topic_config={"flush.messages": "1"}).resolved()
    settings = opts.topic_settings({"flush.messages": "1000", "retention.ms": "60000", "min.insync.replicas": "3"})
    assert settings == {"flush.messages": "1", "retention.ms": "60000", "min.insync.replicas": "2",
                        "unclean.leader.election.enable": "false"}
