"""A deposed leader that comes back (its partition healed, or resumed from a pause) acts on its old metadata until
it has caught up with the controller: acks=1 writes it acknowledges then (retransmitted requests reach it at once)
are at risk. A restarted process believes nothing, so a kill and restart leaves no such window."""
from kafka_chaos.checkers.model import FaultEffect, run_model
from kafka_chaos.checkers.model.config import METADATA_CATCHUP_NS
from tests.checkers.test_isr_model import T0, S, cfg, isolate, kill, restart


def isolated_from_everyone(node, t, action="start"):
    ev = isolate(node, t, action)
    drops = ev.drops + (("client", node), (node, "client"))
    return FaultEffect(t_ns=t, action=action, effect="net", nodes=(node,), fault="leader-isolate", drops=drops)


def pause(node, t, action="start"):
    return FaultEffect(t_ns=t, action=action, effect="pause", nodes=(node,), fault="pause")


def test_acks_1_writes_acked_by_the_deposed_leader_just_after_the_heal_are_at_risk():
    heal = T0 + 30 * S
    model = run_model(cfg(acks=("1",), min_isr=2), [isolated_from_everyone(1, T0 + 10 * S),
                                                    isolated_from_everyone(1, heal, "heal")],
                      t_begin=T0, t_end=T0 + 120 * S)
    assert model.durability(0, heal + 2 * S, "1")[0] == "at_risk"
    assert model.durability(0, heal + METADATA_CATCHUP_NS + 3 * S, "1")[0] == "guaranteed"


def test_acks_all_on_a_zombie_whose_isr_was_full_stays_guaranteed():
    heal = T0 + 30 * S
    model = run_model(cfg(acks=("all",), min_isr=2), [isolated_from_everyone(1, T0 + 10 * S),
                                                      isolated_from_everyone(1, heal, "heal")],
                      t_begin=T0, t_end=T0 + 120 * S)
    assert model.durability(0, heal + 2 * S, "all")[0] == "guaranteed"


def test_a_resumed_leader_is_a_zombie_too():
    resume = T0 + 30 * S
    model = run_model(cfg(acks=("1",), min_isr=2), [pause(1, T0 + 10 * S), pause(1, resume, "heal")],
                      t_begin=T0, t_end=T0 + 120 * S)
    assert model.durability(0, resume + 1 * S, "1")[0] == "at_risk"


def test_a_killed_and_restarted_leader_is_no_zombie():
    back = T0 + 30 * S
    model = run_model(cfg(acks=("1",), min_isr=2), [kill(1, T0 + 10 * S), restart(1, back)],
                      t_begin=T0, t_end=T0 + 120 * S)
    assert model.durability(0, back + 2 * S, "1")[0] == "guaranteed"
