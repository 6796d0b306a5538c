"""A killed broker is electable until the controller fences it (issue 48): the KRaft controller elects any broker it
counts active (ReplicationControlManager.generateLeaderAndIsrUpdates, isAcceptableLeader = ClusterControlManager
.isActive: registered, not fenced, not in controlled shutdown), and it learns of a kill only when the session lapses.

The run: leader 1 of [1, 2, 3] (dedicated controller, min ISR 2, ELR on, acks=1); follower 3's fetches from 1 stop
at 10 s, but it stays in the ISR (lag 30 s); then a cascade kill. Kafka: fencing 1 (29 s) elects the dead 2,
fencing 2 elects the dead 3, fencing 3 empties the ISR with 3 the last known leader; back from their unclean
shutdowns all leave the ELR, and 3 is elected as the last known leader (PartitionChangeBuilder
.canElectLastKnownLeader). 3 lacks what 1 acked after 10 s: those acks=1 writes are lost. The model before the fix
elected nobody (no live replica), kept 1's log as the truth, and called them guaranteed.
"""
import pandas as pd

from kafka_chaos.checkers.model import run_model
from kafka_chaos.checkers.model.elections import leader_mismatches
from kafka_chaos.checkers.model.observed import model_disagreements
from tests.checkers.conftest import T, sample
from tests.checkers.test_isr_model import T0, S, cfg, kill, restart
from tests.checkers.test_kafka_rules_model import cut

DEDICATED = dict(brokers=(1, 2, 3), controllers=(101,))


def cascade(third_killed_s: float, elr=True):
    """1 killed at 20 s, 2 at 22 s, the stale follower 3 at `third_killed_s`; all back at 60 s."""
    timeline = [cut([(1, 3)], T0 + 10 * S), kill(1, T0 + 20 * S), kill(2, T0 + 22 * S),
                kill(3, T0 + int(third_killed_s * S))] + [restart(n, T0 + 60 * S) for n in (1, 2, 3)]
    return run_model(cfg(acks=("1",), min_isr=2, version="4.1.0", elr=elr, **DEDICATED), timeline,
                     t_begin=T0, t_end=T0 + 300 * S)


def elected(model):
    return [(round((e["t_ns"] - T0) / S, 1), e["leader"], e["how"]) for e in model.events if e["event"] == "leader"]


def acks_1(model, t_s):
    return model.durability(0, T0 + t_s * S, "1", T0 + t_s * S)


def test_in_a_cascade_kill_the_dead_unfenced_brokers_are_elected_in_turn_and_the_last_known_leader_at_the_restart():
    model = cascade(third_killed_s=24)
    assert elected(model) == [(29.0, 2, "from the ISR"), (31.0, 3, "from the ISR"),
                              (60.0, 3, "as the last known leader (ISR and ELR empty)")]


def test_an_acks_1_write_the_stale_last_known_leader_lacks_is_at_risk():
    status, reason = acks_1(cascade(third_killed_s=24), 15)
    assert status == "at_risk" and "broker 3" in reason         # was: guaranteed, nobody ever elected


def test_a_write_the_stale_follower_fetched_before_its_cut_stays_guaranteed():
    assert acks_1(cascade(third_killed_s=24), 5)[0] == "guaranteed"


def test_with_the_stale_follower_fenced_first_the_last_known_leader_holds_the_write():
    # 3 killed at 17 s, more than a heartbeat interval (2 s) before the others, so its session lapses first in
    # Kafka too: fenced at 26 s, out of the ISR while 1 still leads; 2, elected dead at 1's fencing, is the last
    # known leader and holds 1's log up to 20 s
    model = cascade(third_killed_s=17)
    assert elected(model)[-1] == (60.0, 2, "as the last known leader (ISR and ELR empty)")
    assert acks_1(model, 15)[0] == "guaranteed"


def test_a_stale_follower_whose_session_lapses_a_tick_after_the_others_is_still_electable_when_they_are_fenced():
    # boundary: 3's session lapses 0.1 s after 2's, so 3 is still active when 2 is fenced, and is elected
    model = cascade(third_killed_s=22.1)
    assert (31.0, 3, "from the ISR") in elected(model)
    assert acks_1(model, 15)[0] == "at_risk"


def test_a_stale_follower_killed_after_the_leaders_fencing_is_elected_alive_as_before():
    # 3 still running at 29 s: elected at 2's fencing either way; the dead 2 led in between
    model = cascade(third_killed_s=30)
    assert [b for _, b, _ in elected(model)] == [2, 3, 3]
    assert acks_1(model, 15)[0] == "at_risk"


# -- the self-check compares the samples of a dead broker not yet fenced ------------------------------------------

KILL_1_AND_3 = [kill(1, T + 10 * S), kill(3, T + 12 * S)]     # 1 fenced at 19 s, 3 at 21 s


def samples_naming_3_from(t_s: float) -> pd.DataFrame:
    """Leader 1 until 19 s, then 2 (alive, first in replica order: Kafka's choice), except the dead 3 for 2 s from
    `t_s`."""
    def leader(t):
        return 1 if t < 19_000 else 3 if t_s * 1000 <= t < t_s * 1000 + 2000 else 2
    return pd.DataFrame([sample(t, leader(t), (1, 2, 3) if t < 19_000 else (2, 3)) for t in range(0, 40_000, 500)])


def self_check(samples):
    model = run_model(cfg(**DEDICATED), KILL_1_AND_3, samples, t_begin=T, t_end=T + 40 * S)
    return [(d["cluster_leader"], round((d["t_ns"] - T) / S, 1)) for d in leader_mismatches(model, samples)]


def test_a_dead_broker_not_yet_fenced_that_the_samples_elect_and_no_replay_did_is_a_leader_mismatch():
    # 3 is dead but still active at 19.5 s (fenced at 21 s): Kafka could have elected it, the model elected 2
    assert (3, 19.5) in self_check(samples_naming_3_from(19.5))


def test_a_dead_broker_named_leader_after_its_fencing_is_a_stale_answer():
    assert self_check(samples_naming_3_from(21.5)) == []


def test_the_dead_unfenced_brokers_the_model_elects_in_a_cascade_are_no_disagreement():
    # the cascade's samples as Kafka shows them: the dead 2 elected at 29 s, the dead 3 at 31 s
    samples = pd.DataFrame([sample(t, 1, (1, 2, 3)) for t in range(0, 29_000, 500)] +
                           [sample(t, 2, (2, 3)) for t in range(29_000, 31_000, 500)] +
                           [sample(t, 3, (3,), elr=[2]) for t in range(31_000, 33_000, 500)])
    timeline = [kill(1, T + 20 * S), kill(2, T + 22 * S), kill(3, T + 24 * S)]
    model = run_model(cfg(version="4.1.0", **DEDICATED), timeline, samples, t_begin=T, t_end=T + 40 * S)
    assert [d for d in model_disagreements(model, samples) if d["kind"] == "leader_mismatch"] == []
