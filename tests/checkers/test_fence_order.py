"""Brokers whose sessions lapse together are fenced one at a time, stalest first; the order decides the last ISR
member and so, with ELR, the last known leader. The controller's log says the order, and the model follows it."""
import pandas as pd

from kafka_chaos.checkers.model import ModelConfig, run_model
from kafka_chaos.checkers.model.observed import model_disagreements
from tests.checkers.conftest import MS, T, fault
from tests.checkers.test_isr_model import T0, cfg, kill, restart
from tests.checkers.test_kafka_rules_model import cut

S = 1000 * MS
CFG = ModelConfig(kafka_version="4.4.0", partitions=1, replication_factor=3, min_insync_replicas=2,
                  elr_enabled=True, controllers=(101,), brokers=(1, 2, 3), broker_session_timeout_ms=6_000)
POWER_LOSSALL = pd.DataFrame([fault(30_000, "start", "power_loss", [1, 2, 3]),
                               fault(43_000, "heal", "power_loss", [1, 2, 3])])
LEADER_1 = pd.DataFrame({"t_ns": [T], "partition": [0], "leader": [1], "isr": [[1, 3, 2]]})
UNFENCED = {3: [T + 69_800 * MS], 1: [T + 70_400 * MS], 2: [T + 70_900 * MS]}


def last_leader(fences):
    model = run_model(CFG, POWER_LOSSALL, LEADER_1, t_begin=T, t_end=T + 90 * S, unfences=UNFENCED, fences=fences)
    return [(e["leader"], e["how"]) for e in model.events if e["event"] == "leader" and not e.get("transient")][-1]


def test_the_logged_fencing_order_makes_the_last_isr_member_fenced_the_last_known_leader():
    # as the controller logged it on 2026-11-27: 1 and 3 at 36.5 s, 2 at 36.6 s
    fences = {1: [T + 36_500 * MS], 3: [T + 36_510 * MS], 2: [T + 36_600 * MS]}
    assert last_leader(fences) == (2, "as the last known leader (ISR and ELR empty)")


def test_another_logged_order_elects_another_broker():
    fences = {1: [T + 36_500 * MS], 2: [T + 36_510 * MS], 3: [T + 36_600 * MS]}
    assert last_leader(fences) == (3, "as the last known leader (ISR and ELR empty)")


# -- without the controller's log every order is replayed ---------------------------------------------------------
# Leader 3 of [3, 1, 2] (ELR on, acks=1); follower 1's fetches from 3 stop at 10 s, it stays in the ISR (lag 30 s);
# all three are killed in one tick at 30 s, so their sessions lapse together at 39 s. Kafka fences the stalest
# first, a matter of milliseconds: any of the three may be fenced last and be the last known leader. Fencing by id
# (1, 2, 3) leaves the leader 3, leader first (3, 1, 2) leaves 2: neither leaves the stale 1, whose election at the
# restart loses 3's acks=1 writes from 10 s on.

LEADER_3 = pd.DataFrame({"t_ns": [T0], "partition": [0], "leader": [3], "isr": [[3, 1, 2]]})


def all_killed(stale_killed_s: float = 30, fences=None):
    timeline = [cut([(3, 1)], T0 + 10 * S)] + \
        [kill(n, T0 + int((stale_killed_s if n == 1 else 30) * S)) for n in (1, 2, 3)] + \
        [restart(n, T0 + 60 * S) for n in (1, 2, 3)]
    return run_model(cfg(acks=("1",), version="4.1.0", brokers=(1, 2, 3), controllers=(101,)), timeline,
                     LEADER_3, t_begin=T0, t_end=T0 + 300 * S, fences=fences)


def last_known_leaders(model):
    """The broker each replay elects as the last known leader."""
    return [next((e["leader"] for e in r.events if e["event"] == "leader" and "last known" in e["how"]), None)
            for r in [model, *model.alternatives]]


def acks_1(model, t_s):
    return model.durability(0, T0 + t_s * S, "1", T0 + t_s * S)[0]


def test_brokers_fenced_together_without_a_logged_order_are_each_the_last_known_leader_in_some_replay():
    model = all_killed()
    assert last_known_leaders(model)[:2] == [3, 2]           # by id, and leader first
    assert set(last_known_leaders(model)) == {1, 2, 3}       # the rotations of the id order add the stale 1


def test_an_acks_1_write_the_stale_lower_id_follower_lacks_is_at_risk_when_the_fencing_order_is_unknown():
    assert acks_1(all_killed(), 15) == "at_risk"             # was: guaranteed (1 was never the last one fenced)
    assert acks_1(all_killed(), 5) == "guaranteed"           # fetched by 1 before its cut


def test_a_logged_order_that_fences_the_stale_follower_first_keeps_the_write_guaranteed():
    fences = {1: [T0 + 39_000 * MS], 2: [T0 + 39_010 * MS], 3: [T0 + 39_020 * MS]}
    model = all_killed(fences=fences)
    assert set(last_known_leaders(model)) == {3} and model.alternatives and len(model.alternatives) == 1
    assert acks_1(model, 15) == "guaranteed"


def test_a_stale_follower_killed_a_heartbeat_interval_before_the_others_is_fenced_first_in_every_replay():
    # its session lapses alone at 36 s, before the others' (2 s: broker.heartbeat.interval.ms, so Kafka agrees)
    model = all_killed(stale_killed_s=27)
    assert 1 not in last_known_leaders(model)
    assert acks_1(model, 15) == "guaranteed"


def test_a_stale_follower_killed_a_tick_after_the_others_is_fenced_last_in_every_replay():
    model = all_killed(stale_killed_s=30.1)
    assert set(last_known_leaders(model)) == {1}
    assert acks_1(model, 15) == "at_risk"


def test_every_other_fencing_order_is_an_alternative_replay_of_both_timings():
    model = all_killed()
    assert len(model.alternatives) == 1 + 2 + 2            # late, and two more orders of each
    assert {r.config.replica_lag_time_max_ms for r in model.alternatives} == {30_000, 45_000}


def test_an_unclean_election_only_some_fencing_orders_make_is_no_certain_prediction():
    # 3.9, no ELR, unclean on; leader 1 of [1, 2, 3], all killed in one tick, only 1 and 2 restarted. By id and
    # leader first, 3 is fenced last and keeps its ISR membership, so 1 is elected uncleanly; fenced last
    # itself, 1 is elected from the ISR. The samples show no unclean election: no disagreement.
    timeline = [kill(n, T0 + 30 * S) for n in (1, 2, 3)] + [restart(n, T0 + 60 * S) for n in (1, 2)]
    samples = pd.DataFrame({"t_ns": [T0 + t * S for t in (0, 29, 70, 80)], "partition": [0] * 4,
                            "leader": [1, 1, 1, 1], "isr": [[1, 2, 3]] * 2 + [[1]] * 2,
                            "elr": [None] * 4, "high_watermark": [0, 10, 10, 12]})
    model = run_model(cfg(version="3.9.1", min_isr=1, unclean=True, brokers=(1, 2, 3), controllers=(101,)),
                      timeline, samples, t_begin=T0, t_end=T0 + 200 * S)
    hows = [next(e["how"] for e in r.events if e["event"] == "leader" and e["t_ns"] >= T0 + 60 * S)
            for r in [model, *model.alternatives]]
    assert hows[:2] == ["uncleanly", "uncleanly"] and "from the ISR" in hows
    assert [d for d in model_disagreements(model, samples) if d["kind"] == "predicted_unclean_election_not_seen"] == []
