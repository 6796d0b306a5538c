"""Every modelled rule of checkers/model/releases.py on its boundary: the same timeline on the last release without
the rule and the first with it (or with the feature off and on), and the outcome the rule decides."""
import json

import pandas as pd
import pytest

from kafka_chaos.checkers.model import FaultEffect, run_model
from kafka_chaos.checkers.model.releases import RULES, applies
from tests.checkers.adversarial.scenarios import (
    T0,
    at,
    cut,
    durability,
    elected,
    kraft,
    proc,
    replay,
    zookeeper,
)

PROBED = {
    "leader_epoch_truncation": "test_a_deposed_leaders_writes_after_the_election_are_truncated_away",
    "session_defaults_kip537": "test_zookeeper_sessions_and_lag_time_change_at_2_5",
    "zookeeper_controller": "test_zookeeper_mode_ends_at_4_0_and_its_failover_waits_for_the_zookeeper_session",
    "unclean_election_in_zookeeper": "test_unclean_election_on_both_sides_of_the_kraft_3_9_boundary",
    "isr_change_through_controller": "test_a_leader_cut_from_the_controller_shrinks_its_isr_only_before_2_7",
    "unclean_election_in_kraft": "test_unclean_election_on_both_sides_of_the_kraft_3_9_boundary",
    "eligible_leader_replicas": "test_elr_off_and_on_when_the_isr_falls_below_min_isr_and_the_leader_dies",
    "last_known_leader": "test_the_last_known_leader_on_both_sides_of_4_0",
    "reassignment_completes_once_adding_in_isr": "test_a_move_with_a_dead_kept_replica_on_both_sides_of_4_3",
    "one_stale_broker_fenced_at_a_time": "test_the_last_known_leader_on_both_sides_of_4_0",
    "restarted_broker_serves_once_unfenced": "tests/checkers/adversarial/test_boundary_probes.py (restart before "
                                             "and after fencing)",
}


def test_every_modelled_release_rule_has_a_probe_and_every_unmodelled_one_says_so():
    modelled = {name for name, rule in RULES.items() if rule.modelled}
    assert modelled == set(PROBED)
    here = globals()
    for rule, probe in PROBED.items():
        assert probe in here or probe.startswith("tests/"), rule
    # named for the reader, not replayed: a run on those releases may disagree with the model there
    assert set(RULES) - modelled == {"epoch_end_offset_for_older_epochs", "fetch_carries_leader_epoch",
                                     "last_known_leader_elected_while_fenced", *TRANSACTION_RULES}


# the transaction rules are not replayed by the ISR model: checkers/lso.py and the final drain use them
# (transaction_rules); each is probed on both sides of its boundary in tests/checkers/test_lso_stuck.py
TRANSACTION_RULES = {"timed_out_transactions_aborted", "describe_producers", "transaction_partition_verification",
                     "epoch_bump_per_transaction", "commit_marker_is_a_record"}   # the last: test_txn_markers.py


def test_a_deposed_leaders_writes_after_the_election_are_truncated_away():
    # KIP-101: broker 1, cut from its followers and the controller but not from the clients, keeps appending as
    # leader of epoch 0; 2 is elected at epoch 1 and 1 truncates to 2's log when it learns of it.
    faults = [cut([(1, 2), (1, 3), (1, 101)], 10), cut([(1, 2), (1, 3), (1, 101)], 40, "heal")]
    model = replay(kraft(), faults, until=120)
    assert elected(model)[0] == (2, "from the ISR")
    assert durability(model, 8, "1") == "guaranteed"             # before the cut (less the replication slack)
    assert durability(model, 10.5, "1") == "at_risk"             # after it: only 1 holds it
    assert durability(model, 10.5, "all") == "guaranteed"        # never acked: the HW cannot pass 2 and 3


def test_zookeeper_sessions_and_lag_time_change_at_2_5(tmp_path):
    from kafka_chaos.history.meta import load_meta
    assert not applies("session_defaults_kip537", "2.4.1", "zookeeper")
    assert applies("session_defaults_kip537", "2.5.0", "zookeeper")
    seen = {}
    for version in ("2.4.1", "2.5.0"):
        (tmp_path / "meta.json").write_text(json.dumps({"run_id": "r", "partitions": 1, "replication_factor": 3,
                                                        "min_insync_replicas": 2, "kafka_version": version,
                                                        "metadata_mode": "zookeeper"}))
        meta = load_meta(tmp_path)
        seen[version] = (meta.broker_session_timeout_ms, meta.replica_lag_time_max_ms)
    assert seen == {"2.4.1": (6_000, 10_000), "2.5.0": (18_000, 30_000)}
    # and the model fails a killed leader over one session later
    for version, session in (("2.4.1", 6), ("2.5.0", 18)):
        cfg = zookeeper(version=version, broker_session_timeout_ms=seen[version][0],
                        replica_lag_time_max_ms=seen[version][1])
        model = replay(cfg, [proc("kill", 1, 10)], until=80)
        first = next(e for e in model.events if e["event"] == "leader")
        assert (first["t_ns"] - at(10)) / 1e9 == pytest.approx(session, abs=0.3)


def test_zookeeper_mode_ends_at_4_0_and_its_failover_waits_for_the_zookeeper_session():
    assert applies("zookeeper_controller", "3.9.2", "zookeeper") and not applies("zookeeper_controller", "4.0.0",
                                                                                 "zookeeper")
    zk = replay(zookeeper(), [proc("kill", 1, 10)], until=80)
    kr = replay(kraft(version="3.9.2"), [proc("kill", 1, 10)], until=80)
    t_zk = next(e["t_ns"] for e in zk.events if e["event"] == "leader")
    t_kr = next(e["t_ns"] for e in kr.events if e["event"] == "leader")
    assert t_kr - at(10) < 10 * 1e9 < t_zk - at(10)                # 9 s broker session vs 18 s ZooKeeper session


@pytest.mark.parametrize("version, mode, unclean", [("3.8.1", "kraft", False), ("3.9.0", "kraft", True),
                                                    ("2.8.2", "zookeeper", True)])
def test_unclean_election_on_both_sides_of_the_kraft_3_9_boundary(version, mode, unclean):
    faults = [proc("kill", 2, 10), proc("kill", 3, 10), proc("kill", 1, 80), proc("kill", 2, 100, "heal")]
    cfg = (kraft if mode == "kraft" else zookeeper)(version=version, min_isr=1, unclean=True, elr=False) \
        if mode == "kraft" else zookeeper(version=version, min_isr=1, unclean=True)
    model = replay(cfg, faults, until=200)
    assert any(how == "uncleanly" for _, how in elected(model)) is unclean
    # the loss it excuses, and the counter-case: without the unclean election the same write is guaranteed
    assert durability(model, 60, "all") == ("at_risk" if unclean else "guaranteed")
    assert (model.rewrite_cause(0, 5, at(61)) is not None) is unclean


@pytest.mark.parametrize("elr", [False, True])
def test_elr_off_and_on_when_the_isr_falls_below_min_isr_and_the_leader_dies(elr):
    # 3 dies (ISR [1, 2]), then 2 (ISR [1] < min ISR 2: with ELR 2 joins the ELR); 1 is stopped cleanly, 2 restarts
    faults = [proc("kill", 3, 10), proc("stop", 2, 60), proc("stop", 1, 80), proc("stop", 2, 100, "heal")]
    model = replay(kraft(version="4.1.0", elr=elr), faults, until=200)
    assert (any(how == "from the ELR" for _, how in elected(model)) or
            any(e["event"] == "isr" and 2 in (e.get("elr") or ()) for e in model.events)) is elr
    assert model.unwritable(0, at(190), at(190), "1") is not elr      # without ELR 2 may not lead: offline
    for t in range(0, 200, 10):
        assert durability(model, t, "all") == "guaranteed"


@pytest.mark.parametrize("version, last_known", [("3.9.2", False), ("4.0.0", True)])
def test_the_last_known_leader_on_both_sides_of_4_0(version, last_known):
    # all three die together: fenced one at a time (1, 2, 3), the ISR empties with 3 leading; back from their
    # unclean shutdowns they leave the ELR, and from 4.0 (ELR on) 3 is elected as the last known leader
    faults = [cut([(1, 3)], 10)] + [proc("kill", n, 30) for n in (1, 2, 3)] + \
        [proc("kill", n, 60, "heal") for n in (1, 2, 3)]
    model = replay(kraft(version=version, elr=last_known), faults, until=300)
    assert [e["leader"] for e in model.events if e["event"] == "leader" and e.get("transient")][:2] == [2, 3]
    lk = [leader for leader, how in elected(model) if "last known" in how]
    assert lk == ([3] if last_known else [])
    # without ELR the last replica standing, 3, keeps its ISR membership and is elected from it: the same loss
    assert (3, "as the last known leader (ISR and ELR empty)" if last_known else "from the ISR") in elected(model)
    assert durability(model, 20, "1") == "at_risk"               # 3 lacked 1's writes after 10 s
    assert durability(model, 20, "all") == "guaranteed"          # never acked: 3 was in the ISR and not fetching
    assert durability(model, 5, "1") == "guaranteed"


@pytest.mark.parametrize("version, shrinks", [("2.6.3", True), ("2.7.0", False)])
def test_a_leader_cut_from_the_controller_shrinks_its_isr_only_before_2_7(version, shrinks):
    # ZooKeeper mode; the controller is broker 3. Leader 1 loses broker 3 (its follower and the controller) but not
    # ZooKeeper: before KIP-497 it writes the shrink to ZooKeeper itself; from 2.7 it must ask the controller.
    faults = [cut([(1, 3)], 10)]
    samples = pd.DataFrame({"t_ns": [T0], "partition": [0], "leader": [1], "isr": [[1, 2, 3]],
                            "high_watermark": [0], "controller": [3]})
    model = run_model(zookeeper(version=version, replica_lag_time_max_ms=10_000), faults, samples,
                      t_begin=T0, t_end=at(120))
    shrunk = [e["isr"] for e in model.events if e["event"] == "isr"]
    assert ([1, 2] in shrunk) is shrinks
    assert model.unwritable(0, at(60), at(60), "all") is not shrinks   # acks=all waits for 3 while it stays


def _move(action, t):
    return FaultEffect(t_ns=at(t), action=action, effect="reassign", nodes=(1, 2, 3, 4), fault="partition-reassign",
                       partition=0, moves=((1, 2, 3), (4, 2, 3)))


@pytest.mark.parametrize("version, completes", [("4.2.1", False), ("4.3.0", True)])
def test_a_move_with_a_dead_kept_replica_on_both_sides_of_4_3(version, completes):
    # KAFKA-19975: with 2 (kept) dead and out of the ISR, the move [1, 2, 3] -> [4, 2, 3] completes once 4 joins,
    # from 4.3.0; up to 4.2.1 it waits for every target replica
    cfg = kraft(version=version, brokers=(1, 2, 3, 4), replica_lag_time_max_ms=5000, broker_session_timeout_ms=6000)
    model = replay(cfg, [proc("kill", 2, 10), _move("start", 30)], until=90)
    done = [e for e in model.events if e["event"] == "reassigned"]
    assert bool(done) is completes
    if completes:
        assert done[0]["replicas"] == [4, 2, 3] and elected(model)[-1][0] in (3, 4)
