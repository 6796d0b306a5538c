"""`kafka-chaos run --keep-cluster`: the run's cluster outlives the process, under the --name given, so that it can
be reused or removed by name afterwards."""
import os
import subprocess
import sys
import time

import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.cluster.kafka_cluster import KafkaCluster
from tests.conftest import TEST_VERSION

pytestmark = pytest.mark.cluster


def test_a_kept_cluster_is_still_up_under_its_name_after_the_run_has_exited(tmp_path):
    name = f"kept{os.getpid()}"
    argv = [sys.executable, "-m", "kafka_chaos.harness.cli", "run", "leader-kill", "--duration", "8", "--seed", "1",
            "--results", str(tmp_path), "--no-check", "--keep-cluster", "--name", name]
    if TEST_VERSION:
        argv += ["--kafka-version", TEST_VERSION]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"kafka-chaos cluster down --name {name}" in done.stderr
        time.sleep(3)          # a watchdog, if one were armed, sweeps as soon as its process is gone
        cluster = KafkaCluster.attach(name)
        assert cluster.persistent
        assert len(cluster.brokers) == 3 and all(b.is_running() for b in cluster.brokers)
        assert cluster.admin().list_topics(timeout=30).brokers, "the kept cluster's brokers answer"
    finally:
        try:
            KafkaCluster.attach(name).down()
        except UsageError:
            pass
    with pytest.raises(UsageError, match="no cluster named"):
        KafkaCluster.attach(name)
