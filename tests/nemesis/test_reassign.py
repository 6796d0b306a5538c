"""partition-reassign on real brokers: the replica set moves to the drawn target, and heal moves it back.

The shared 3-broker cluster and a replication-factor-2 topic leave one broker outside the replica set to move to
(the scenario uses 4 brokers and replication factor 3)."""
from __future__ import annotations

import uuid

import pytest

from kafka_chaos.base.waiting import wait_until
from kafka_chaos.nemesis import registry
from kafka_chaos.nemesis.base import FaultError
from kafka_chaos.nemesis.registry import FaultArgs

pytestmark = pytest.mark.cluster


@pytest.fixture
def rf2_topic(cluster):
    name = f"r-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=1, replication_factor=2)
    wait_until(lambda: len(cluster.partition(name, 0).isr) == 2, 60, f"{name} never had a full ISR")
    yield name
    cluster.delete_topics([name])


def test_partition_reassign_moves_the_replicas_and_heal_moves_them_back(cluster, rf2_topic, nem, events):
    before = cluster.partition(rf2_topic, 0).replicas
    fault = nem.start(registry.build("partition-reassign", FaultArgs(topic=rf2_topic, seed=3)))
    d = events[0].details
    assert d["effect"] == "reassign" and d["from"] == before and len(d["to"]) == 2
    assert len(set(d["to"]) - set(before)) == 1 and set(d["to"]) <= {b.id for b in cluster.brokers}
    # the new replica is added, catches up, joins the ISR; only then the old one is removed
    wait_until(lambda: (lambda s: s.replicas == d["to"] and set(s.isr) == set(d["to"]))(
        cluster.partition(rf2_topic, 0)), 60, f"{rf2_topic}/0 never moved to {d['to']}")
    nem.heal(fault)
    s = cluster.partition(rf2_topic, 0)
    assert s.replicas == before and set(s.isr) == set(before)
    assert [e.action for e in events] == ["start", "heal"]


def test_partition_reassign_refuses_when_every_broker_holds_a_replica(cluster, topic, nem, events):
    with pytest.raises(FaultError, match="nowhere to move"):
        nem.start(registry.build("partition-reassign", FaultArgs(topic=topic)))
    assert events == [] and nem.active == []
