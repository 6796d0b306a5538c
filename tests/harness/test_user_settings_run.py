"""A real short run with a user's own settings: they reach the brokers and the topic (as the brokers themselves
describe them), the recorded command and meta.json, and the model's configuration in the verdict."""
import json
import os
import subprocess
import sys

import pytest

from kafka_chaos.cluster.kafka_cluster import KafkaCluster
from kafka_chaos.harness.cli import main
from tests.conftest import TEST_VERSION
from tests.schemas import validate_run

pytestmark = pytest.mark.cluster


def described(cluster: KafkaCluster, kind, name: str) -> dict[str, str]:
    from confluent_kafka.admin import ConfigResource

    res = ConfigResource(kind, name)
    return {k: e.value for k, e in cluster.admin().describe_configs([res])[res].result(timeout=30).items()}


def test_a_run_applies_records_and_models_the_users_broker_and_topic_settings(tmp_path, capsys):
    from confluent_kafka.admin import ConfigResource

    name = f"settings{os.getpid()}"
    argv = ["run", "leader-kill", "--duration", "20", "--seed", "3", "--results", str(tmp_path), "--engine", "pandas",
            "--reuse-cluster", "--name", name,            # a cluster that stays up, so the brokers can be asked after
            "--broker-config", "replica.lag.time.max.ms=7000", "--broker-config", "log.cleaner.enable=false",
            "--topic-config", "min.insync.replicas=2", "--topic-config", "flush.messages=1"]
    if TEST_VERSION:
        argv += ["--kafka-version", TEST_VERSION]
    try:
        assert main(argv) == 0, capsys.readouterr()
        cluster = KafkaCluster.attach(name)
        for broker in cluster.brokers:
            configs = described(cluster, ConfigResource.Type.BROKER, str(broker.id))
            assert configs["replica.lag.time.max.ms"] == "7000" and configs["log.cleaner.enable"] == "false"
        topic = described(cluster, ConfigResource.Type.TOPIC, "chaos")
        assert topic["min.insync.replicas"] == "2" and topic["flush.messages"] == "1"
    finally:
        subprocess.run([sys.executable, "-m", "kafka_chaos.harness.cli", "cluster", "down", "--name", name],
                       capture_output=True, timeout=120)
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    validate_run(run_dir)                                 # topic_settings is part of the published meta schema
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["broker_settings"]["replica.lag.time.max.ms"] == "7000"
    assert meta["broker_settings"]["log.cleaner.enable"] == "false"
    assert meta["topic_settings"] == {"min.insync.replicas": "2", "flush.messages": "1",
                                      "unclean.leader.election.enable": "false"}
    assert meta["min_insync_replicas"] == 2
    assert "--broker-config replica.lag.time.max.ms=7000" in meta["command"]
    assert "--topic-config flush.messages=1" in meta["command"]
    model = json.loads((run_dir / "verdict.json").read_text())["model"]
    assert model["replica_lag_time_max_ms"] == 7000 and model["unflushed_ms"] == 0
