"""Process faults against the real cluster: each does what it says, and heal undoes it."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, Producer

from kafka_chaos.base.waiting import wait_until
from kafka_chaos.nemesis import registry
from kafka_chaos.nemesis.registry import FaultArgs
from tests.nemesis.probes import wait_healthy

pytestmark = pytest.mark.cluster

SESSION_S = 6.0          # broker.session.timeout.ms of the test cluster
MARGIN_S = 6.0


def controller_serving(cluster) -> bool:
    """A request the brokers must forward to the controller succeeds (validate-only topic creation)."""
    from confluent_kafka.admin import NewTopic

    fut = cluster.admin().create_topics([NewTopic("probe-controller", 1, 1)], validate_only=True,
                                        request_timeout=3)["probe-controller"]
    fut.result(timeout=5)
    return True


def leader_change(cluster, topic, old, timeout):
    t0 = time.monotonic()
    new = wait_until(lambda: (lambda lead: lead if lead not in (None, old) else None)(cluster.leader(topic, 0)),
                     timeout, f"no new leader for {topic}/0 within {timeout} s")
    return new, time.monotonic() - t0


@pytest.mark.parametrize("name, state", [("kill", "exited"), ("stop", "exited"), ("pause", "paused")])
def test_kill_stop_pause_a_chosen_node_and_heal_it(cluster, nem, events, name, state):
    fault = nem.start(registry.build(name, FaultArgs(targets=(3,))))
    assert cluster.node(3).state() == state
    assert [n.state() for n in cluster.nodes if n.id != 3] == ["running"] * 3
    nem.heal(fault)
    assert cluster.node(3).state() == "running"
    effect = {"kill": "kill", "stop": "stop", "pause": "pause"}[name]
    assert [(e.action, e.fault, e.nodes, e.details["effect"]) for e in events] == [
        ("start", name, [3], effect), ("heal", name, [3], effect)]
    assert events[0].t_ns < events[1].t_ns
    if name == "kill":
        assert events[0].details["signal"] == "SIGKILL"


def test_heal_is_idempotent(cluster, nem, events):
    fault = nem.start(registry.build("pause", FaultArgs(targets=(2,))))
    nem.heal(fault)
    nem.heal(fault)
    fault.heal(cluster)
    assert [e.action for e in events] == ["start", "heal"]
    assert cluster.node(2).state() == "running"


def test_kill_leader_elects_another_within_the_session_timeout_and_heal_brings_it_back(cluster, topic, nem, events):
    old = cluster.leader(topic, 0)
    fault = nem.start(registry.build("leader-kill", FaultArgs(topic=topic)))
    assert events[0].nodes == [old] and cluster.node(old).state() == "exited"
    new, took = leader_change(cluster, topic, old, SESSION_S + MARGIN_S)
    assert new != old and took < SESSION_S + MARGIN_S
    wait_until(lambda: old not in cluster.isr(topic, 0), 10, f"{old} still in ISR")
    nem.heal(fault)
    wait_until(lambda: old in cluster.isr(topic, 0), 60, f"{old} did not rejoin the ISR after heal")


def test_kill_follower_keeps_the_leader_and_shrinks_the_isr_until_heal(cluster, topic, nem, events):
    state = cluster.partition(topic, 0)
    fault = nem.start(registry.build("follower-kill", FaultArgs(topic=topic, seed=3)))
    (victim,) = events[0].nodes
    assert victim in state.replicas and victim != state.leader
    assert cluster.node(victim).state() == "exited"
    wait_until(lambda: victim not in cluster.isr(topic, 0), SESSION_S + MARGIN_S, f"{victim} still in the ISR")
    assert cluster.leader(topic, 0) == state.leader
    nem.heal(fault)
    wait_until(lambda: victim in cluster.isr(topic, 0), 60, f"{victim} did not rejoin the ISR after heal")


def test_stop_leader_moves_leadership_by_controlled_shutdown(cluster, topic, nem):
    old = cluster.leader(topic, 0)
    t0 = time.monotonic()
    fault = nem.start(registry.build("leader-stop", FaultArgs(topic=topic)))
    new, _ = leader_change(cluster, topic, old, 5)
    # a controlled shutdown hands leadership over before the broker exits: far quicker than a session timeout
    assert time.monotonic() - t0 < SESSION_S and cluster.node(old).state() == "exited"
    nem.heal(fault)
    wait_until(lambda: old in cluster.isr(topic, 0), 60, f"{old} did not rejoin the ISR after heal")


def _producer(cluster, **extra):
    return Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0,
                     "message.timeout.ms": 3000, "request.timeout.ms": 2000, "retries": 1000,
                     "enable.idempotence": False, "log_level": 0} | extra)


def _send(producer, topic, partition, value) -> KafkaError | None:
    results = []
    producer.produce(topic, value=value, partition=partition, on_delivery=lambda err, msg: results.append(err))
    producer.flush(10)
    assert results, "no delivery report"
    return results[0]


def test_pause_makes_produce_requests_to_that_broker_time_out(cluster, topic, nem):
    producer = _producer(cluster)
    assert _send(producer, topic, 0, b"before") is None         # metadata and connections are warm
    fault = nem.start(registry.build("leader-pause", FaultArgs(topic=topic)))
    err = _send(producer, topic, 0, b"during")                   # 3 s message timeout < 6 s session timeout
    assert err is not None and err.code() == KafkaError._MSG_TIMED_OUT, err
    nem.heal(fault)
    wait_healthy(cluster, topic, 60)
    assert _send(producer, topic, 0, b"after") is None


def test_kill_controller_kills_the_active_controller_and_heal_restarts_it(cluster, topic, nem, events):
    active = cluster.active_controller()
    fault = nem.start(registry.build("controller-kill"))
    assert events[0].nodes == [active] and events[0].details["target"] == "controller"
    assert cluster.node(active).state() == "exited" and cluster.active_controller() is None
    nem.heal(fault)
    wait_until(lambda: cluster.active_controller() == active, 30, "controller did not come back")
    wait_until(lambda: controller_serving(cluster), 60, "brokers cannot reach the restarted controller")
    wait_healthy(cluster, topic, 60)


def test_kill_all_kills_every_broker_at_once(cluster, topic, nem, events):
    fault = nem.start(registry.build("all-kill"))
    assert events[0].nodes == [1, 2, 3]
    assert [b.state() for b in cluster.brokers] == ["exited"] * 3
    nem.heal(fault)
    wait_healthy(cluster, topic, 90)


def _started_at(node) -> str:
    c = node.container
    c.reload()
    return c.attrs["State"]["StartedAt"]


def test_rolling_restart_restarts_one_broker_at_a_time_with_a_full_isr_between(cluster, topic, nem, events):
    before = {b.id: _started_at(b) for b in cluster.brokers}
    fault = nem.start(registry.build("rolling-restart"))
    assert not fault.active
    assert [(e.action, e.nodes) for e in events] == [("start", [1]), ("heal", [1]), ("start", [2]), ("heal", [2]),
                                                     ("start", [3]), ("heal", [3])]
    assert all(e.details["effect"] == "stop" for e in events)
    # each stop row starts after the previous broker's restart row: never two brokers down at once in the history
    assert all(later.t_ns >= earlier.t_ns for earlier, later in zip(events, events[1:]))
    assert all(_started_at(b) != before[b.id] for b in cluster.brokers)
    assert cluster.is_healthy(topic)


def test_cascade_kill_kills_followers_then_leader_and_restarts_the_first_follower_first(cluster, topic, nem, events):
    leader = cluster.leader(topic, 0)
    fault = nem.start(registry.build("cascade-kill", FaultArgs(topic=topic, interval_s=1.0)))
    kills = [e for e in events if e.action == "start"]
    assert [e.details["role"] for e in kills] == ["follower", "follower", "leader"]
    assert kills[-1].nodes == [leader]
    # each kill row carries when that kill began, one interval after the previous kill ended, not before it
    for earlier, later in zip(kills, kills[1:]):
        assert later.t_ns - earlier.details["applied_ns"] >= 0.9e9
    assert all(b.state() == "exited" for b in cluster.brokers if b.id in {n for e in kills for n in e.nodes})
    nem.heal(fault)
    heals = [e for e in events if e.action == "heal"]
    assert [e.nodes for e in heals] == [e.nodes for e in kills]       # first killed, first restarted
    wait_healthy(cluster, topic, 90)
