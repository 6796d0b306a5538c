"""Rules on their time boundaries: a tick either side of a session lapse, a restart before and after the fencing,
an ISR shrink at 1.0x and 1.5x replica.lag.time.max.ms."""
import pytest

from kafka_chaos.checkers.model.config import RESTART_UNFENCE_NS
from tests.checkers.adversarial.scenarios import (
    T0,
    S,
    at,
    cut,
    durability,
    elected,
    fenced_at,
    kraft,
    proc,
    replay,
)

# -- the session lapse (broker.session.timeout.ms, 9 s): BrokerHeartbeatManager fences a broker whose last
# heartbeat is older than the session. Paused at 10.0 s, broker 1's last heartbeat was at 9.9 s: the controller
# fences it at the first tick more than 9 s later, 19.0 s, unless a heartbeat came first.


def test_a_leader_thawed_a_tick_before_its_session_lapses_keeps_its_registration_and_its_leadership():
    model = replay(kraft(), [proc("pause", 1, 10), proc("pause", 1, 18.9, "heal")], until=80)
    for replay_ in [model] + model.alternatives:
        assert fenced_at(replay_, 1) == [] and elected(replay_) == []
    assert durability(model, 19.5, "1") == "guaranteed"          # it still leads: no zombie
    assert durability(model, 19.5, "all") == "guaranteed"


def test_a_leader_thawed_a_tick_after_its_session_lapsed_was_fenced_and_is_a_zombie_until_it_learns():
    model = replay(kraft(), [proc("pause", 1, 10), proc("pause", 1, 19.1, "heal")], until=80)
    assert fenced_at(model, 1) == [pytest.approx(19.0)]
    assert elected(model)[0] == (2, "from the ISR")
    assert durability(model, 19.6, "1") == "at_risk"             # thawed on its old metadata: acks=1 goes
    assert durability(model, 19.6, "all") == "guaranteed"        # acks=all waits for an ISR that moved on


# -- a restart before and after the fencing (rule 1 of issue 32): either way the controller fences the old
# incarnation when its session lapses (registerBroker refuses the new one while the session is valid) and elects
# from the rest of the ISR; the new process leads nothing and serves nothing until it is unfenced.

@pytest.mark.parametrize("effect", ["kill", "power_loss"])
@pytest.mark.parametrize("back", [18.9, 19.5])
def test_a_leader_restarted_before_or_after_its_fencing_hands_over_without_acknowledging_anything(effect, back):
    model = replay(kraft(), [proc(effect, 1, 10), proc(effect, 1, back, "heal")], until=120)
    for replay_ in [model] + model.alternatives:
        assert fenced_at(replay_, 1) == [pytest.approx(19.0)]
        assert elected(replay_)[0] == (2, "from the ISR")
        unfenced = [e["t_ns"] for e in replay_.events if e["event"] == "unfenced" and e["node"] == 1]
        assert unfenced and unfenced[0] >= at(19.0)
    for t in (back + 0.2, 19.2, 22, 30):
        assert durability(model, t, "1") == "guaranteed", t      # nothing acknowledged by the new process
    for t in (5, 9, 9.9):
        assert durability(model, t, "all") == "guaranteed", t    # 2 held every acks=all write
    assert model.unwritable(0, at(back + 0.2), at(back + 0.2), "1")   # no leader anyone reaches until 2 leads


def test_the_restarted_broker_is_unfenced_only_once_started_up_in_the_late_replay():
    model = replay(kraft(), [proc("kill", 1, 10), proc("kill", 1, 18.9, "heal")], until=120)
    late = model.alternatives[0]
    unfenced = [e["t_ns"] for e in late.events if e["event"] == "unfenced" and e["node"] == 1]
    assert unfenced and unfenced[0] >= at(18.9) + RESTART_UNFENCE_NS - S // 10


# -- the ISR shrink: Partition.maybeShrinkIsr, scheduled every lag/2 by ReplicaManager's isr-expiration task, drops a
# follower between 1.0x and 1.5x replica.lag.time.max.ms (30 s) after its last caught-up fetch. Follower 3 is cut
# from leader 1 at 10 s; min ISR 3, so once 3 is out acks=all is refused (NOT_ENOUGH_REPLICAS).

def _shrink():
    return replay(kraft(min_isr=3), [cut([(1, 3)], 10)], until=150)


def _shrunk_at(model) -> float:
    return next((e["t_ns"] - T0) / S for e in model.events if e["event"] == "isr" and e["isr"] == [1, 2])


def test_the_recorded_replay_shrinks_at_1x_the_lag_and_the_late_one_at_1_5x():
    model = _shrink()
    assert _shrunk_at(model) == pytest.approx(10 + 30, abs=0.25)
    assert _shrunk_at(model.alternatives[0]) == pytest.approx(10 + 45, abs=0.25)


def test_an_acks_all_ack_just_after_1x_the_lag_is_no_certain_breach_and_one_after_1_5x_is():
    model = _shrink()
    [(p, start, end)] = model.min_isr_windows()
    assert p == 0 and end > at(140)
    assert at(40.1) < start                       # at 1.0x Kafka may still count 3 in its ISR
    assert start <= at(55 + 1.5 + 0.1)            # at 1.5x (plus the replication slack) it cannot
    assert model.unwritable(0, at(20), at(20), "all")         # either way acks=all waits from the cut
    assert not model.unwritable(0, at(20), at(20), "1")
