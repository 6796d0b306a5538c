"""Targets resolve at start from the live cluster; random ones are fixed by their seed."""
from __future__ import annotations

import pytest

from kafka_chaos.nemesis import network
from kafka_chaos.nemesis.base import Controller, Followers, Leader, RandomBrokers

pytestmark = pytest.mark.cluster


def test_leader_and_followers_are_read_from_the_live_partition(cluster, topic):
    state = cluster.describe(topic)[1]
    assert Leader(topic, 1).resolve(cluster) == [state.leader]
    assert sorted(Followers(topic, 1).resolve(cluster) + [state.leader]) == sorted(state.replicas)


def test_controller_is_the_active_one(cluster):
    assert Controller().resolve(cluster) == [cluster.active_controller()] == [101]


def test_random_minority_is_a_minority_fixed_by_the_seed(cluster):
    picks = {tuple(RandomBrokers(seed, None).resolve(cluster)) for seed in range(30)}
    assert all(len(p) == 1 for p in picks)                   # 3 brokers: a minority is one broker
    assert picks == {(1,), (2,), (3,)}                        # every broker gets its turn over seeds
    assert RandomBrokers(9, None).resolve(cluster) == RandomBrokers(9, None).resolve(cluster)


def test_split_and_bridge_shapes_are_fixed_by_the_seed(cluster):
    for cls in (network.Split, network.Bridge):
        assert cls(seed=4)._resolve(cluster) == cls(seed=4)._resolve(cluster)
    nodes, drops, details = network.Bridge(seed=4)._resolve(cluster)
    left, right = details["halves"]
    assert details["bridge"] not in left + right and sorted(left + right + [details["bridge"]]) == sorted(nodes)
    assert all([details["bridge"], x] not in drops for x in nodes)
