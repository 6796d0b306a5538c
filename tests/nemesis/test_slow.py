"""Slow nodes on real brokers: a CPU quota that drives a follower out of the ISR, and a heal that puts the
container's own limits back, as the kernel's cgroup holds them and as Docker records them."""
from __future__ import annotations

import threading

import pytest
from confluent_kafka import Producer

from kafka_chaos.base.waiting import wait_until
from kafka_chaos.nemesis import registry, throttle
from kafka_chaos.nemesis.control import sweep
from kafka_chaos.nemesis.registry import FaultArgs
from tests.nemesis.probes import wait_healthy

pytestmark = pytest.mark.cluster

CGROUP_FILES = ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us")   # cgroup v1
CGROUP_V2 = "/sys/fs/cgroup/cpu.max"


def cpu_cgroup(node) -> str:
    """The CFS quota and period the kernel applies to the node's processes, read inside the container."""
    rc, out = node.exec(["cat", *CGROUP_FILES], check=False)
    return " ".join(out.split()) if rc == 0 else node.exec(["cat", CGROUP_V2])[1].strip()


@pytest.fixture
def load(cluster, topic):
    """acks=1 writes to `topic` as fast as the leader takes them, so a starved follower cannot keep up."""
    stop = threading.Event()

    def produce():
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "1", "linger.ms": 5})
        while not stop.is_set():
            for _ in range(500):
                try:
                    p.produce(topic, b"x" * 200, partition=0)
                except BufferError:
                    break
            p.poll(0.05)
        p.flush(10)

    t = threading.Thread(target=produce, daemon=True)
    t.start()
    yield
    stop.set()
    t.join(30)


def test_follower_slow_drives_the_follower_out_of_the_isr_and_heal_restores_its_limits(cluster, topic, nem, events,
                                                                                    load):
    state = cluster.partition(topic, 0)
    before = {n.id: (cpu_cgroup(n), throttle.CpuLimits.of(n.container)) for n in cluster.brokers}
    fault = nem.start(registry.build("follower-slow", FaultArgs(topic=topic, seed=0, cpus=0.01)))
    [slowed] = fault.nodes
    assert slowed in state.replicas and slowed != state.leader
    quota, period = (int(x) for x in cpu_cgroup(cluster.node(slowed)).split()[:2])
    assert quota == period // 100                                        # 1% of a core, in the kernel
    assert events[0].details["effect"] == "slow" and events[0].details["cpus"] == 0.01
    # Out of the ISR: lagging behind the leader's log end (Partition.maybeShrinkIsr) or fenced for missed heartbeats
    wait_until(lambda: slowed not in cluster.partition(topic, 0).isr, 90,
               f"broker {slowed} stayed in {topic}/0's ISR under a 1% CPU quota")
    nem.heal(fault)
    assert {n.id: (cpu_cgroup(n), throttle.CpuLimits.of(n.container).unlimited) for n in cluster.brokers} == \
        {i: (cg, limits.unlimited) for i, (cg, limits) in before.items()}
    wait_until(lambda: slowed in cluster.partition(topic, 0).isr, 90, f"broker {slowed} did not rejoin the ISR")


def test_sweep_lifts_a_quota_a_crashed_run_left(cluster, topic):
    node = cluster.node(1)
    before = cpu_cgroup(node)
    throttle.set_quota(node, 50_000)
    assert cpu_cgroup(node) != before
    assert sweep(cluster) == []
    assert cpu_cgroup(node) == before
    wait_healthy(cluster, topic)
