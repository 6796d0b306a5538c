"""Network faults against the real cluster: each cut is observed from inside the nodes or from the client host,
and heal leaves no rule of ours in any namespace."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from kafka_chaos.base.waiting import wait_until
from kafka_chaos.nemesis import netrules, registry
from kafka_chaos.nemesis.events import CLIENT
from kafka_chaos.nemesis.registry import FaultArgs
from tests.nemesis.probes import assert_no_rules_of_ours, client_reaches, reachable_from, wait_healthy

pytestmark = pytest.mark.cluster

SESSION_S, LAG_S, MARGIN_S = 6.0, 5.0, 6.0


def others(cluster, ids):
    return [n for n in cluster.nodes if n.id not in ids]


def test_isolate_leader_elects_another_leader_and_the_old_one_leaves_and_rejoins_the_isr(cluster, topic, nem, events):
    old = cluster.leader(topic, 0)
    t0 = time.monotonic()
    fault = nem.start(registry.build("leader-isolate", FaultArgs(topic=topic)))
    new = wait_until(lambda: (lambda lead: lead if lead not in (None, old) else None)(cluster.leader(topic, 0)),
                     SESSION_S + MARGIN_S, "no new leader")
    assert new != old and time.monotonic() - t0 < SESSION_S + MARGIN_S
    wait_until(lambda: old not in cluster.isr(topic, 0), LAG_S + MARGIN_S, f"{old} still in the ISR")
    drops = events[0].details["drops"]
    assert [old, CLIENT] in drops and [CLIENT, old] in drops and [old, 101] in drops
    nem.heal(fault)
    wait_until(lambda: old in cluster.isr(topic, 0), 60, f"{old} did not rejoin the ISR")
    assert_no_rules_of_ours(cluster)
    wait_healthy(cluster, topic, 60)


def test_isolate_cuts_a_node_from_every_node_and_the_client_only(cluster, nem):
    target = cluster.node(3)
    fault = nem.start(registry.build("isolate", FaultArgs(targets=(3,))))
    assert not any(reachable_from(target, others(cluster, [3])).values())
    assert reachable_from(cluster.node(1), others(cluster, [1, 3])) == {2: True, 101: True}
    assert not client_reaches(target) and client_reaches(cluster.node(1))
    nem.heal(fault)
    assert all(reachable_from(target, others(cluster, [3])).values()) and client_reaches(target)
    assert_no_rules_of_ours(cluster)


def test_isolate_controller_cuts_the_active_controller_from_the_brokers(cluster, nem, events):
    active = cluster.active_controller()
    fault = nem.start(registry.build("controller-isolate"))
    assert events[0].nodes == [active]
    for b in cluster.brokers:
        assert reachable_from(b, [cluster.node(active)]) == {active: False}
    nem.heal(fault)
    assert reachable_from(cluster.node(1), [cluster.node(active)]) == {active: True}


def test_split_cuts_minority_from_majority_and_keeps_each_side_whole(cluster, nem, events):
    fault = nem.start(registry.build("split", FaultArgs(seed=5)))
    minority, majority = events[0].details["minority"], events[0].details["majority"]
    assert len(minority) < len(majority) and sorted(minority + majority) == [1, 2, 3, 101]
    for m in minority:
        assert not any(reachable_from(cluster.node(m), [cluster.node(x) for x in majority]).values())
    a = majority[0]
    assert all(reachable_from(cluster.node(a), [cluster.node(x) for x in majority[1:]]).values())
    nem.heal(fault)
    assert_no_rules_of_ours(cluster)


def test_bridge_joins_two_halves_through_one_node(cluster, nem, events):
    fault = nem.start(registry.build("bridge", FaultArgs(seed=1)))
    left, right = events[0].details["halves"]
    bridge = cluster.node(events[0].details["bridge"])
    assert left and right
    for x in left:
        assert not any(reachable_from(cluster.node(x), [cluster.node(y) for y in right]).values())
    assert all(reachable_from(bridge, [cluster.node(y) for y in left + right]).values())
    assert all(reachable_from(cluster.node(x), [bridge])[bridge.id] for x in left + right)
    nem.heal(fault)
    assert_no_rules_of_ours(cluster)


def _raw_counter(node, peer_ip) -> int:
    """Packets from peer_ip that arrived at `node` (raw PREROUTING, before any filter rule), since zeroed."""
    _, out = node.exec(["iptables", "-w", "5", "-t", "raw", "-L", "PREROUTING", "-v", "-x", "-n"])
    return sum(int(line.split()[0]) for line in out.splitlines() if "probe-one-way" in line and peer_ip in line)


def test_one_way_a_receives_from_b_but_b_receives_nothing_from_a(cluster, nem, events):
    a, b = cluster.node(1), cluster.node(2)
    for n, peer in ((a, b), (b, a)):
        n.iptables("-t", "raw", "-A", "PREROUTING", "-s", peer.ip, "-m", "comment", "--comment", "probe-one-way")
    try:
        fault = nem.start(registry.build("one-way", FaultArgs(targets=(1, 2))))
        assert events[0].details["drops"] == [[1, 2]]
        for n in (a, b):
            n.iptables("-t", "raw", "-Z", "PREROUTING")
        reachable_from(b, [a])              # b's SYNs reach a; a's answers never reach b
        reachable_from(a, [b])
        assert _raw_counter(a, b.ip) > 0
        assert _raw_counter(b, a.ip) == 0
        nem.heal(fault)
        assert reachable_from(a, [b]) == {2: True}
    finally:
        for n, peer in ((a, b), (b, a)):
            n.iptables("-t", "raw", "-D", "PREROUTING", "-s", peer.ip, "-m", "comment", "--comment",
                       "probe-one-way", check=False)


def test_leader_cut_from_followers_shrinks_the_isr_while_it_keeps_controller_and_clients(cluster, topic, nem, events):
    leader = cluster.leader(topic, 0)
    fault = nem.start(registry.build("leader-cut", FaultArgs(topic=topic)))
    followers = events[0].details["followers"]
    node = cluster.node(leader)
    assert not any(reachable_from(node, [cluster.node(f) for f in followers]).values())
    assert reachable_from(node, cluster.controllers) == {c.id: True for c in cluster.controllers}
    assert client_reaches(node)
    # Followers cannot fetch. A follower at the leader's end offset counts as caught up however long it is silent,
    # so keep writing (acks=1): after replica.lag.time.max.ms the leader shrinks the ISR to itself and stays leader.
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "1", "linger.ms": 0,
                         "log_level": 0})

    def shrunk():
        producer.produce(topic, value=b"x", partition=0)
        producer.flush(1)
        return cluster.isr(topic, 0) == [leader]

    wait_until(shrunk, LAG_S + 2 * MARGIN_S, "ISR did not shrink to the leader")
    assert cluster.leader(topic, 0) == leader
    nem.heal(fault)
    wait_healthy(cluster, topic, 60)
    assert_no_rules_of_ours(cluster)


def test_client_isolate_cuts_the_workload_from_chosen_brokers_only(cluster, nem):
    fault = nem.start(registry.build("client-isolate", FaultArgs(targets=(2,))))
    assert not client_reaches(cluster.node(2))
    assert client_reaches(cluster.node(1)) and client_reaches(cluster.node(3))
    assert reachable_from(cluster.node(2), [cluster.node(1), cluster.node(3)]) == {1: True, 3: True}
    nem.heal(fault)
    assert client_reaches(cluster.node(2))


def _connects(src, dst, attempts: int) -> int:
    """How many of `attempts` parallel TCP connects from src to dst complete within 0.5 s (before any SYN retry)."""
    script = (f"for i in $(seq {attempts}); do (timeout 0.5 bash -c '</dev/tcp/{dst.ip}/9092' 2>/dev/null "
              f"&& echo ok) & done; wait")
    _, out = src.exec(["bash", "-c", script], check=False)
    return out.split().count("ok")


def test_packet_loss_shows_measurable_loss_between_two_nodes(cluster, nem, events):
    a, b = cluster.node(1), cluster.node(2)
    assert _connects(b, a, 40) == 40
    fault = nem.start(registry.build("loss", FaultArgs(targets=(1,), peers=(2,), probability=0.5)))
    assert events[0].details["effect"] == "loss" and events[0].details["probability"] == 0.5
    ok = _connects(b, a, 40)
    # SYN and SYN-ACK each survive with p = 0.5: about 10 of 40 connect; nothing like 40, nothing like 0
    assert 1 <= ok <= 25, ok
    nem.heal(fault)
    assert _connects(b, a, 40) == 40
    assert_no_rules_of_ours(cluster)


def test_overlapping_faults_on_one_node_heal_only_their_own_rules(cluster, nem):
    isolate = nem.start(registry.build("isolate", FaultArgs(targets=(3,))))
    loss = nem.start(registry.build("loss", FaultArgs(targets=(3,), peers=(1,), probability=0.2)))
    nem.heal(isolate)
    left = netrules.rules_of_ours(cluster.node(3))
    assert any(loss.tag in line for line in left) and not any(isolate.tag in line for line in left)
    assert reachable_from(cluster.node(3), [cluster.node(2)]) == {2: True}
    nem.heal(loss)
    assert_no_rules_of_ours(cluster)


def test_a_restarted_node_gets_the_rules_of_active_network_faults_back(cluster, nem):
    isolate = nem.start(registry.build("isolate", FaultArgs(targets=(3,))))
    kill = nem.start(registry.build("kill", FaultArgs(targets=(3,))))
    nem.heal(kill)                                  # a fresh network namespace, without any rule...
    assert any(isolate.tag in line for line in netrules.rules_of_ours(cluster.node(3)))   # ...until reapplied
    assert not any(reachable_from(cluster.node(3), [cluster.node(1), cluster.node(101)]).values())
    nem.heal(isolate)
    assert_no_rules_of_ours(cluster)


def test_network_fault_on_a_paused_node_is_applied_and_healed_through_its_namespace(cluster, nem):
    pause = nem.start(registry.build("pause", FaultArgs(targets=(2,))))
    isolate = nem.start(registry.build("isolate", FaultArgs(targets=(2,))))
    assert any(isolate.tag in line for line in netrules.rules_of_ours(cluster.node(2)))
    nem.heal(isolate)
    assert netrules.rules_of_ours(cluster.node(2)) == []
    nem.heal(pause)
    assert_no_rules_of_ours(cluster)
