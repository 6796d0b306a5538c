"""Shared fixtures: one real cluster per pytest process, a fresh topic per test.

The cluster is real (Docker, Kafka jars from Maven Central): integration tests never mock it. Fault detection is
tuned fast (short session and lag times) so fault tests finish quickly. KAFKA_CHAOS_TEST_VERSION picks the version.
"""
from __future__ import annotations

import os
import re
import uuid

import pytest

from kafka_chaos.cluster.config import ClusterConfig

TEST_VERSION = os.environ.get("KAFKA_CHAOS_TEST_VERSION") or None


def fast_cluster_config(name: str, **overrides) -> ClusterConfig:
    """The chaos runs' cluster shape (6 s session timeout, 5 s ISR lag), at the version under test."""
    from kafka_chaos.harness.runner import chaos_cluster_config

    return chaos_cluster_config(name, overrides.pop("kafka_version", TEST_VERSION), **overrides)


@pytest.fixture(scope="session")
def cluster():
    """A 3-broker + 1-controller cluster for the whole test process, removed at the end."""
    from kafka_chaos.cluster.kafka_cluster import KafkaCluster

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
    from kafka_chaos.nemesis.control import sweep

    sweep(cluster)                    # whatever a test did: every node running unpaused, no rule of ours
    cluster.wait_healthy(name, timeout=90)
    cluster.delete_topics([name])


LEFT_BEHIND = pytest.StashKey[list]()


@pytest.fixture(scope="session", autouse=True)
def no_cluster_of_the_tests_survives(request):
    """After the session, the clusters its tests named after this process (`<word><pid>`) are gone: one a test
    left behind (CI, 2026-11-28: a persistent `cluster up` whose test raised before its cleanup) is removed here and
    named in the summary, not left running on the machine."""
    yield
    try:
        import docker
        from kafka_chaos.cluster.kafka_cluster import LABEL, LABEL_CLUSTER

        client = docker.from_env()
        labelled = [c.labels for c in client.containers.list(all=True, ignore_removed=True, filters={"label": LABEL})]
        labelled += [n.attrs["Labels"] for n in client.networks.list(filters={"label": LABEL})]
    except Exception:       # no Docker (a unit-only session): nothing of ours can be running
        return
    from kafka_chaos.harness.cli import main

    ours = re.compile(rf"[a-z-]+{os.getpid()}")
    left = sorted({name for labels in labelled if ours.fullmatch(name := labels.get(LABEL_CLUSTER, ""))})
    for name in left:
        main(["cluster", "down", "--name", name])      # as a user would: nodes, network, lazyfs mounts
    request.config.stash[LEFT_BEHIND] = left

def pytest_terminal_summary(terminalreporter, config):
    if left := config.stash.get(LEFT_BEHIND, []):
        terminalreporter.section("clusters the tests left behind (removed)")
        terminalreporter.write_line(", ".join(left))
