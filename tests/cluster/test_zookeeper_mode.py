"""ZooKeeper mode on a real 3.9 cluster (one cluster, one short scenario): a ZooKeeper node from the release's own
jars, brokers registered in it, the controller a broker, and a controller-kill run that aims at that broker,
records the metadata mode and is judged by the ZooKeeper-mode rules."""
import json
import os

import pandas as pd
import pytest

from kafka_chaos.cluster import zookeeper
from kafka_chaos.cluster.kafka_cluster import KafkaCluster
from kafka_chaos.harness.run_options import RunOptions, chaos_cluster_config
from kafka_chaos.harness.runner import run
from tests.schemas import validate_run

pytestmark = pytest.mark.cluster
ZK_VERSION = "3.9.2"             # the last release with ZooKeeper mode


@pytest.fixture(scope="module")
def zk_cluster():
    cluster = KafkaCluster(chaos_cluster_config(f"zk{os.getpid()}", ZK_VERSION, metadata="zookeeper")).up()
    yield cluster
    cluster.down()


def test_brokers_register_in_zookeeper_and_one_of_them_is_the_controller(zk_cluster):
    assert [n.role for n in zk_cluster.zookeepers] == ["zookeeper"] and not zk_cluster.controllers
    dump = zookeeper.four_letter(zk_cluster.zookeepers[0].ip, "dump")
    assert zookeeper.registered_brokers(dump) == [1, 2, 3]
    controller = zk_cluster.active_controller()
    assert controller in (1, 2, 3)
    # the Admin API's DescribeCluster names the same broker (the controller every broker was told of)
    assert zk_cluster.admin().describe_cluster(request_timeout=10).result(timeout=15).controller.id == controller
    assert "zookeeper metadata" in zk_cluster.status()


def test_controller_kill_hits_the_controller_broker_and_is_judged_as_zookeeper_mode(zk_cluster, tmp_path):
    before = zk_cluster.active_controller()
    result = run(RunOptions(scenario="controller-kill", acks="1", duration_s=25, seed=5, results=tmp_path,
                            engine="pandas", live=False, kafka_version=ZK_VERSION), cluster=zk_cluster)
    validate_run(result.run_dir)
    meta = json.loads((result.run_dir / "meta.json").read_text())
    assert meta["metadata_mode"] == "zookeeper" and meta["zookeeper"] == [201] and "controllers" not in meta
    faults = pd.read_parquet(result.run_dir / "history" / "faults.parquet")
    started = faults[faults["action"] == "start"]
    assert len(started) and started.iloc[0]["nodes"].tolist() == [before]      # the controller broker, killed
    assert result.verdict is not None and result.exit_code in (0, 1)
    model = result.verdict["model"]
    assert model["metadata_mode"] == "zookeeper" and model["broker_session_timeout_ms"] == 6000
    assert "zookeeper_controller" in {r["rule"] for r in model["release_rules"]}
    # the model's disagreements with what the cluster visibly did are listed, and none is expected here
    assert result.verdict["model_disagreements"] == [], result.verdict["model_disagreements"]
