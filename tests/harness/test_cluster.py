"""The cluster on real brokers: produce and consume, and the ISR reacting to kills, pauses and dropped traffic."""
import pytest

from kafka_chaos.base.waiting import wait_until
from tests.harness.kafka_io import consume_all, produce

pytestmark = pytest.mark.cluster


def test_three_brokers_and_a_dedicated_controller(cluster):
    assert [n.id for n in cluster.brokers] == [1, 2, 3]
    assert [n.id for n in cluster.controllers] == [101]
    assert cluster.active_controller() == 101
    assert all(n.state() == "running" for n in cluster.nodes)


def test_produce_and_consume_on_a_replicated_topic(cluster, topic):
    assert all(len(s.replicas) == 3 and set(s.isr) == set(s.replicas) for s in cluster.describe(topic))
    values = [f"v{i}" for i in range(100)]
    reports = produce(cluster.bootstrap_servers, topic, values, acks="all")
    assert [err for _, _, err in reports] == [None] * 100
    assert [off for _, off, _ in reports] == list(range(100))
    assert consume_all(cluster.bootstrap_servers, topic) == values
    assert cluster.high_watermarks(topic)[0] == 100


def test_killed_follower_leaves_the_isr_and_rejoins_after_restart(cluster, topic):
    state = cluster.partition(topic, 0)
    follower = cluster.node(next(r for r in state.replicas if r != state.leader))
    follower.kill()
    wait_until(lambda: follower.id not in cluster.isr(topic, 0), 30, f"{follower} still in the ISR")
    follower.start()
    wait_until(lambda: follower.id in cluster.isr(topic, 0), 60, f"{follower} did not rejoin the ISR")


def test_paused_leader_is_replaced_by_another_leader(cluster, topic):
    old = cluster.leader(topic, 0)
    cluster.node(old).pause()
    try:
        # broker.session.timeout.ms is 6 s in the test cluster: fenced and replaced well within 30 s
        wait_until(lambda: cluster.leader(topic, 0) not in (None, old), 30, f"leader {old} was not replaced")
    finally:
        cluster.node(old).unpause()
    wait_until(lambda: len(cluster.isr(topic, 0)) == 3, 60, "the resumed broker did not rejoin the ISR")


def test_dropping_a_followers_traffic_shrinks_the_isr(cluster, topic):
    state = cluster.partition(topic, 0)
    follower = cluster.node(next(r for r in state.replicas if r != state.leader))
    leader = cluster.node(state.leader)
    produce(cluster.bootstrap_servers, topic, ["before"])
    follower.iptables("-A", "INPUT", "-s", leader.ip, "-j", "DROP")
    try:
        # replica.lag.time.max.ms is 5 s: the leader drops the silent follower from the ISR soon after
        produce(cluster.bootstrap_servers, topic, [f"during{i}" for i in range(10)], acks="1")
        wait_until(lambda: follower.id not in cluster.isr(topic, 0), 40, f"{follower} still in the ISR")
    finally:
        follower.iptables("-D", "INPUT", "-s", leader.ip, "-j", "DROP")
    wait_until(lambda: follower.id in cluster.isr(topic, 0), 60, f"{follower} did not rejoin")
