"""Shared fixtures: one real cluster per pytest process, a fresh topic per test.

The cluster is real (Docker, Kafka jars from Maven Central): integration tests never mock it. Fault detection is
tuned fast (short session and lag times) so fault tests finish quickly. KAFKA_CHAOS_TEST_VERSION picks the version.
"""
from __future__ import annotations

import os
import uuid

import pytest

from harness.config import ClusterConfig

TEST_VERSION = os.environ.get("KAFKA_CHAOS_TEST_VERSION") or None


def fast_cluster_config(name: str, **overrides) -> ClusterConfig:
    base = dict(name=name, kafka_version=TEST_VERSION, brokers=3, controllers=1, min_insync_replicas=2,
                replica_lag_time_max_ms=5000, broker_session_timeout_ms=6000, broker_heartbeat_interval_ms=1000)
    base.update(overrides)
    return ClusterConfig(**base)


@pytest.fixture(scope="session")
def cluster():
    """A 3-broker + 1-controller cluster for the whole test process, removed at the end."""
    from harness.cluster import KafkaCluster

    c = KafkaCluster(fast_cluster_config(f"test{os.getpid()}"))
    c.up()
    yield c
    c.down()


@pytest.fixture
def topic(cluster):
    """A fresh RF=3, 3-partition topic with min.insync.replicas=2; the cluster is healed and healthy after."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=3, replication_factor=3, configs={"min.insync.replicas": "2"})
    yield name
    for n in cluster.nodes:           # whatever a test did, leave every node running for the next one
        if n.state() == "paused":
            n.unpause()
        elif n.state() != "running":
            n.start()
        if n.is_running():
            n.iptables("-F", check=False)
    cluster.wait_healthy(name, timeout=90)
    cluster.delete_topics([name])
