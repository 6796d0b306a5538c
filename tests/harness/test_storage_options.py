"""--power-loss-fs and --flush-every-write: what they set, that the reproducing command keeps them, and that the
storage scenarios turn the layer on themselves while every other scenario runs without it."""
import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.harness.cli import build_parser
from kafka_chaos.harness.cluster_options import ClusterChoice
from kafka_chaos.harness.run_options import RunOptions
from kafka_chaos.harness.scenarios import CATALOG
from kafka_chaos.nemesis import registry
from kafka_chaos.nemesis.registry import FaultArgs

STORAGE = {"power-loss-all", "leader-power-loss", "leader-disk-full", "follower-damage"}


def test_flush_every_write_sets_log_flush_interval_messages_and_survives_into_the_command():
    args = build_parser().parse_args(["run", "power-loss-all", "--flush-every-write", "--power-loss-fs"])
    choice = ClusterChoice.from_args(args)
    opts = RunOptions(scenario="power-loss-all", cluster=choice, seed=1).resolved()
    config = opts.cluster_config("x")
    assert config.log_flush_interval_messages == 1 and config.power_loss_fs
    assert config.broker_settings()["log.flush.interval.messages"] == "1"
    assert "--flush-every-write" in opts.command() and "--power-loss-fs" in opts.command()


def test_a_flush_setting_that_contradicts_flush_every_write_is_refused():
    choice = ClusterChoice(flush_every_write=True, broker_config={"log.flush.interval.messages": "5"})
    with pytest.raises(UsageError, match="--flush-every-write"):
        RunOptions(scenario="leader-kill", cluster=choice, seed=1).resolved()


def test_only_the_storage_scenarios_put_the_brokers_on_the_layer():
    for name in CATALOG:
        group = {"consumer_mode": "subscribe", "consumers": 3} if CATALOG[name].consumer_group else {}
        config = RunOptions(scenario=name, seed=1, **group).resolved().cluster_config("x")
        assert config.power_loss_fs == (name in STORAGE), name
        assert config.log_flush_interval_messages is None


def test_storage_faults_refuse_bad_arguments_before_touching_anything():
    with pytest.raises(UsageError, match="cannot damage"):
        registry.build("damage", FaultArgs(damage_file="meta.properties"))
    with pytest.raises(UsageError, match="damage mode"):
        registry.build("damage", FaultArgs(damage_mode="shred"))
    with pytest.raises(UsageError, match="takes no --target"):
        registry.build("power-loss-all", FaultArgs(targets=(1,)))
