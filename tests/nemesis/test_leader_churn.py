"""leader-churn against the real cluster: each change moves the partition's leadership and is recorded as the
model's own effects (a kill or stop start/heal pair per broker, an elect pair per preferred election), and heal
leaves every broker running with the partition's ISR whole."""
from __future__ import annotations

import pytest

from kafka_chaos.nemesis import registry
from kafka_chaos.nemesis.registry import FaultArgs

pytestmark = pytest.mark.cluster


def test_a_churn_moves_the_leader_at_each_change_and_heals_to_a_whole_isr(cluster, nem, events, topic):
    before = cluster.partition(topic, 0)
    fault = nem.start(registry.build("leader-churn", FaultArgs(topic=topic, changes=3, within_s=12, seed=5)))
    nem.heal(fault)
    assert all(n.state() == "running" for n in cluster.nodes)
    after = cluster.partition(topic, 0)
    assert set(after.isr) == set(after.replicas) == set(before.replicas)
    starts = [e for e in events if e.action == "start"]
    heals = [e for e in events if e.action == "heal"]
    assert 1 <= len(starts) <= 3 and len(heals) == len(starts)
    assert all(e.fault == "leader-churn" and e.details["effect"] in ("kill", "stop", "elect") for e in events)
    for start, heal in zip(starts, heals):               # each change closes before the next begins
        assert start.t_ns <= heal.t_ns and start.nodes == heal.nodes
    assert [e.details["change"] for e in starts] == list(range(1, len(starts) + 1))
    leaders = [e.details.get("previous", e.nodes[0]) for e in starts]
    assert all(a != b for a, b in zip(leaders, leaders[1:])), f"a change left the same leader: {leaders}"
    for e in starts:
        if e.details["effect"] == "elect":
            assert e.details["preferred"] == before.replicas[0] != e.details["previous"]
