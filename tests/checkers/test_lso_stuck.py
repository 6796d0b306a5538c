"""A stuck last stable offset against Kafka's own bound, the open transaction's producer named, the release's
transaction rules (checkers/model/releases.py) on both sides of each boundary, and a read_committed final drain that
rests at a stuck LSO: no loss verdict above it (incomplete), yet the run invalid when the LSO is proven stuck."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_chaos.checkers import lso
from kafka_chaos.checkers.completeness import completeness
from kafka_chaos.checkers.model.releases import applies, transaction_rules
from kafka_chaos.harness.cli import main
from kafka_chaos.history.controller_log import transaction_version, transactional_ids
from kafka_chaos.history.eos import abort_bound_ms
from kafka_chaos.history.meta import RunMeta
from kafka_chaos.history.schema import LSO_SCHEMA
from tests.checkers.conftest import MS, T, fault, read, sample, send, write_run

S = 1_000_000_000


def resting(seconds: float, lso_at=286, hw=311, partition=0, start_s=40.0, step=0.5) -> pd.DataFrame:
    """Samples of one partition whose LSO rests below its HW for `seconds`, then moves past it."""
    t = np.arange(start_s, start_s + seconds + step / 2, step)
    rows = pd.DataFrame({"t_ns": (T + t * S).astype(np.int64), "partition": partition, "high_watermark": hw,
                         "last_stable_offset": lso_at})
    after = pd.DataFrame({"t_ns": [int(T + (t[-1] + 2) * S)], "partition": partition, "high_watermark": hw + 1,
                          "last_stable_offset": hw + 1})
    return pd.concat([rows, after], ignore_index=True)


# -- Kafka's bound: transaction.timeout.ms + the coordinator's abort interval + the markers' write -----------------

def test_the_bound_is_the_timeout_plus_the_coordinators_abort_interval():
    assert abort_bound_ms(20000) == 20000 + 10000 + 5000
    assert abort_bound_ms(60000, abort_interval_ms=1000) == 66000


def test_a_processor_stopped_mid_transaction_is_aborted_within_the_bound_and_is_not_stuck():
    # the real run (seed 35, 20 s timeout): the LSO rested 25.5 s after the heal, the abort came 34 s after the
    # transaction began; judged against the timeout alone it was lso_stuck
    assert lso.find(resting(25.5), healed_ns=int(T + 39.5 * S), timeout=20000).empty
    out = lso.find(resting(36.0), healed_ns=int(T + 39.5 * S), timeout=20000)        # the counter-case
    assert out["kind"].tolist() == ["lso_stuck"] and out["classification"].tolist() == ["violation"]
    assert "35000 ms in all" in out["reason"].iat[0]


# -- the producer, as the brokers named it to the final drain --------------------------------------------------------

def stuck_at(lso_at=286, *open_txns):
    return {"0": {"lso": lso_at, "hw": 311, "open": list(open_txns)}}


def test_lso_stuck_names_the_producer_whose_transaction_starts_at_the_stuck_offset():
    other = {"producer_id": 7, "producer_epoch": 0, "start_offset": 300, "last_timestamp_ms": 1}
    holder = {"producer_id": 4001, "producer_epoch": 3, "start_offset": 286, "last_timestamp_ms": 1}
    out = lso.find(resting(40), int(T + 39.5 * S), 20000, stuck=stuck_at(286, other, holder),
                   rules=transaction_rules("4.4.0", transaction_version=2))
    reason = out["reason"].iat[0]
    assert "held by producer id 4001 (epoch 3)" in reason and "producer id 7" not in reason
    named = lso.find(resting(40), int(T + 39.5 * S), 20000, stuck=stuck_at(286, holder), txn_ids={4001: "run-e0"})
    assert "producer id 4001 (epoch 3, transactional.id run-e0)" in named["reason"].iat[0]
    assert "epoch bump" in reason or "bumps the producer epoch" in reason


def test_the_drains_rest_at_the_same_lso_extends_the_sampled_stretch():
    # the real cascade-kill run's shape: samples end 28.5 s after the heal (under the 35 s bound), the drain rests
    # at the same LSO for 130 s more: stuck, and the producer named
    samples, healed = resting(29.5, lso_at=858, hw=883, start_s=51.0), int(T + 52.0 * S)
    samples = samples.iloc[:-1]                               # the LSO never moved past it
    assert lso.find(samples, healed, 20000).empty
    holder = {"producer_id": 1, "producer_epoch": 0, "start_offset": 858, "last_timestamp_ms": 1}
    rest = {"0": {"lso": 858, "hw": 883, "since_ns": int(T + 150 * S), "until_ns": int(T + 185 * S),
                  "open": [holder]}}
    out = lso.find(samples, healed, 20000, stuck=rest, txn_ids={1: "run-e0"})
    assert out["kind"].tolist() == ["lso_stuck"] and "133.0 s of it after every fault had healed" in \
        out["reason"].iat[0] and "transactional.id run-e0" in out["reason"].iat[0]
    # the counter-case: the drain rested at a later LSO (the stuck one had moved on): no stretch joined
    moved = {"0": {**rest["0"], "lso": 883, "hw": 900}}
    assert lso.find(samples, healed, 20000, stuck=moved).empty


def test_lso_stuck_says_when_no_producer_was_named_and_why():
    samples, healed = resting(40), int(T + 39.5 * S)
    assert "brokers named no open transaction (TimeoutException" in lso.find(
        samples, healed, 20000, stuck=stuck_at(286, {"error": "TimeoutException: x"}))["reason"].iat[0]
    assert "were not asked" in lso.find(samples, healed, 20000, stuck={})["reason"].iat[0]
    old = lso.find(samples, healed, 20000, stuck=stuck_at(286), rules=transaction_rules("2.8.2", "zookeeper"))
    assert "cannot name the open transaction's producer" in old["reason"].iat[0]


# -- the release's transaction rules, both sides of each boundary ----------------------------------------------------

@pytest.mark.parametrize("rule, before, since", [
    ("timed_out_transactions_aborted", "0.10.2", "0.11.0"),
    ("commit_marker_is_a_record", "0.10.2", "0.11.0"),
    ("describe_producers", "2.8.2", "3.0.0"),
    ("transaction_partition_verification", "3.5.2", "3.6.0"),
    ("epoch_bump_per_transaction", "3.9.2", "4.0.0"),
])
def test_each_transaction_rule_holds_from_its_release(rule, before, since):
    assert not applies(rule, before) and applies(rule, since)


def test_a_late_write_can_hang_a_partition_only_before_verification():
    assert "no transaction verification" in transaction_rules("3.5.2").hanging()
    assert "verifies a transactional write" in transaction_rules("3.6.0").hanging()


def test_the_epoch_bump_needs_transaction_version_2_as_well_as_4_0():
    assert not transaction_rules("3.9.2", transaction_version=2).epoch_bump       # no feature before 4.0
    assert transaction_rules("3.9.2").transaction_version == 0
    assert not transaction_rules("4.4.0", transaction_version=1).epoch_bump
    assert transaction_rules("4.4.0", transaction_version=2).epoch_bump
    assert not transaction_rules("4.4.0").epoch_bump                               # not known: not assumed
    assert "may still join the producer's next transaction" in transaction_rules("4.0.0", transaction_version=1
                                                                                 ).hanging()


def test_the_transaction_version_is_read_from_the_controllers_feature_record(tmp_path):
    (tmp_path / "logs").mkdir()
    assert transaction_version(tmp_path) is None
    (tmp_path / "logs/kc-x-c101.log").write_text(
        "[2026-11-27 21:01:11,483] INFO [QuorumController id=101] Replayed a FeatureLevelRecord setting feature "
        "transaction.version to 1 (org.apache.kafka.controller.FeatureControlManager)\n")
    assert transaction_version(tmp_path) == 1
    (tmp_path / "logs/kc-x-b2.log").write_text(
        "[2026-11-27 21:10:19,059] INFO [TransactionCoordinator id=1] Initialized transactionalId run-e0 with "
        "producerId 1001 and producer epoch 0 on partition __transaction_state-41 (kafka.coordinator.transaction."
        "TransactionCoordinator)\n")
    assert transactional_ids(tmp_path) == {1001: "run-e0"}


# -- a read_committed drain resting at the stuck LSO -------------------------------------------------------------------

def drain(stuck: bool) -> dict:
    d = {"healthy": True, "incomplete": [1] if stuck else [], "ends": {"0": 2, "1": 40}, "records": 2}
    if stuck:
        d["stuck"] = {"1": {"lso": 10, "hw": 40, "open": [{"producer_id": 9, "producer_epoch": 1,
                                                             "start_offset": 10, "last_timestamp_ms": 0}]}}
    return d


def test_a_drain_resting_at_the_lso_makes_the_partition_incomplete_with_the_reason():
    m = RunMeta(run_id="r", partitions=2, replication_factor=3, min_insync_replicas=2, drain=drain(True))
    c = completeness(m, {0: 2, 1: 10}, {0, 1})
    assert c.status == "incomplete" and list(c.incomplete) == [1]
    assert "rested at the last stable offset 10, below the high watermark 40" in c.incomplete[1]
    assert "producer id 9" in c.incomplete[1]


def stuck_run(tmp_path, name, stuck_drain: bool, lso_rest_s: float):
    """Partition 1: acked write `z` at offset 20, above an LSO of 10 that rests `lso_rest_s` after the heal."""
    sends = [send("a", offset=0, t=1000), send("b", offset=1, t=1000), send("z", partition=1, offset=20, t=2000)]
    reads = [read("a", offset=0, t=100_000), read("b", offset=1, t=100_000)]
    if not stuck_drain:                           # the same run whose drain read partition 1 and found z gone
        reads.append(read("y", partition=1, offset=10, t=100_000))
    faults = [fault(3000, "start", "kill", [1], signal="SIGKILL"), fault(5000, "heal", "kill", [1])]
    meta = {"partitions": 2, "kafka_version": "4.4.0", "brokers": [1, 2, 3], "controllers": [101],
            "start_ns": T, "end_ns": T + 120_000 * MS, "drain": drain(stuck_drain),
            "producers": [{"name": "p0", "acks": "all", "idempotent": True}],
            "eos": {"transaction_timeout_ms": 20000},
            "broker_settings": {"replica.lag.time.max.ms": "5000", "broker.session.timeout.ms": "6000"}}
    run = write_run(tmp_path / name, sends, reads, faults, **meta)
    samples = resting(lso_rest_s, lso_at=10, hw=40, partition=1, start_s=6.0)
    pq.write_table(pa.Table.from_pandas(samples, schema=LSO_SCHEMA, preserve_index=False),
                   run / "history/lso.parquet")
    return run


def check(run):
    code = main(["check", str(run), "--engine", "pandas", "--force"])
    return code, json.loads((run / "verdict.json").read_text())


def test_a_write_above_a_proven_stuck_lso_is_not_lost_and_the_run_is_invalid(tmp_path):
    code, v = check(stuck_run(tmp_path, "stuck", stuck_drain=True, lso_rest_s=60))
    assert code == 1 and v["status"] == "invalid" and v["violations"] == {"lso_stuck": 1}
    assert v["anomalies"]["lost"] == 0 and "rested at the last stable offset" in v["incomplete"]["partitions"]["1"]


def test_a_drain_resting_at_an_lso_not_proven_stuck_gives_no_verdict(tmp_path):
    code, v = check(stuck_run(tmp_path, "slow", stuck_drain=True, lso_rest_s=20))
    assert code == 3 and v["status"] == "incomplete" and v["valid"] is None
    assert v["anomalies"]["lost"] == 0 and v["anomalies"]["lso_stuck"] == 0


def test_the_counter_case_the_same_write_missing_from_a_drain_that_read_past_it_is_lost(tmp_path):
    code, v = check(stuck_run(tmp_path, "read", stuck_drain=False, lso_rest_s=20))
    assert code == 1 and v["violations"].get("lost") == 1


# -- the bound counted from the transaction log's ISR back, not from the heal request ------------------------------
# The coordinator's abort is a write to __transaction_state with requiredAcks = -1
# (TransactionStateManager.appendTransactionToLog): below transaction.state.log.min.isr it fails and the next abort
# pass retries it. Two of three brokers killed at 10 s and restarted at 20 s; the LSO rests from 15 s to 80 s.

HEAL_S, TIMEOUT_MS = 20.0, 20000                           # abort_bound_ms(20000) == 35 s


def two_of_three_killed(tmp_path, back_s: list[float], name="run"):
    """Brokers 2 and 3 killed and restarted; cluster.parquet shows each in an ISR again at its `back_s`."""
    faults = [fault(10_000, "start", "kill", [2, 3], signal="SIGKILL"), fault(HEAL_S * 1000, "heal", "kill", [2, 3])]
    isr = [sample(t_ms, 1, [1], hw=10) for t_ms in range(10_500, 200_000, 500)]
    for b, s in zip((2, 3), back_s):
        isr += [sample(t_ms, 1, [1, b], hw=10) for t_ms in range(int(s * 1000), 200_000, 500)]
    run = write_run(tmp_path / name, [send("a", offset=0, t=1000)], [], faults, cluster=isr,
                    brokers=[1, 2, 3], partitions=1)
    return run, RunMeta(run_id=name, partitions=1, replication_factor=3, min_insync_replicas=2, brokers=(1, 2, 3))


def judged(run, meta, model=None):
    samples = resting(65.0, lso_at=10, hw=40, start_s=15.0)
    return lso.find(samples, lso.heals(run), TIMEOUT_MS, model, log_back=lso.transaction_log_back(run, meta, model))


def test_the_log_is_back_when_the_first_restarted_broker_rejoins_an_isr_beside_the_survivor(tmp_path):
    run, meta = two_of_three_killed(tmp_path, back_s=[60.0, 90.0])
    back = lso.transaction_log_back(run, meta)
    assert back.t_ns == int(T + 60 * S) and "2 of 3 brokers" in back.what


def test_a_stuck_lso_whose_transaction_log_was_back_long_before_is_a_violation(tmp_path):
    out = judged(*two_of_three_killed(tmp_path, back_s=[21.0, 22.0]))            # back 1 s after the heal
    assert out["classification"].tolist() == ["violation"]
    assert "59.0 s of it after every fault had healed and the transaction log's ISR was back" in out["reason"].iat[0]


def test_a_stuck_lso_whose_transaction_log_came_back_late_is_allowed_the_bound_from_then(tmp_path):
    # 60 s after the heal request, yet 20 s after the log's ISR was back: within the 35 s bound
    assert judged(*two_of_three_killed(tmp_path, back_s=[60.0, 90.0])).empty


@pytest.mark.parametrize("back_s, stuck", [(45.0, False), (44.5, True)])
def test_the_boundary_is_the_bound_counted_from_the_log_back(tmp_path, back_s, stuck):
    # the stretch ends at 80 s: back at 45 s leaves exactly the 35 s bound (not stuck), half a second earlier is stuck
    assert (not judged(*two_of_three_killed(tmp_path, back_s=[back_s, 150.0])).empty) is stuck


def test_a_log_never_shown_back_leaves_nothing_to_judge(tmp_path):
    run, meta = two_of_three_killed(tmp_path, back_s=[300.0, 300.0])            # no sample shows them back
    assert lso.transaction_log_back(run, meta).t_ns is None and judged(run, meta).empty


def test_one_broker_killed_of_three_never_takes_the_log_below_its_min_isr(tmp_path):
    faults = [fault(10_000, "start", "kill", [2]), fault(20_000, "heal", "kill", [2])]
    run = write_run(tmp_path / "one", [send("a", offset=0, t=1000)], [], faults, brokers=[1, 2, 3])
    assert lso.transaction_log_back(run, RunMeta(run_id="one", partitions=3, replication_factor=3,
                                                 min_insync_replicas=2, brokers=(1, 2, 3))) is None


def test_brokers_that_may_not_hold_the_log_count_against_it():
    assert lso.log_isr_needed(3, {}) == 2
    assert lso.log_isr_needed(5, {}) == 4                    # 3 of 5 hold the partition: 4 back surely hold 2 of them
    assert lso.log_isr_needed(3, {"transaction.state.log.min.isr": "1"}) == 1
    assert lso.log_isr_needed(1, {}) == 1


def test_without_samples_the_models_isr_events_show_the_broker_back(tmp_path):
    from kafka_chaos.checkers.model.config import ModelConfig
    from kafka_chaos.checkers.model.result import ModelResult
    faults = [fault(10_000, "start", "kill", [2, 3]), fault(20_000, "heal", "kill", [2, 3])]
    run = write_run(tmp_path / "m", [send("a", offset=0, t=1000)], [], faults, brokers=[1, 2, 3], partitions=1)
    events = [{"t_ns": int(T + 12 * S), "event": "isr", "partition": 0, "isr": [1], "elr": []},
              {"t_ns": int(T + 50 * S), "event": "isr", "partition": 0, "isr": [1, 3], "elr": []}]
    model = ModelResult(ModelConfig("4.4.0", 1, 3, 2, brokers=(1, 2, 3)), [], [], [], events)
    meta = RunMeta(run_id="m", partitions=1, replication_factor=3, min_insync_replicas=2, brokers=(1, 2, 3))
    assert lso.transaction_log_back(run, meta, model).t_ns == int(T + 50 * S)


# -- the predicted loss named only when its window meets the stuck transaction's records ----------------------------

def loss_model(start_s: float, end_s: float):
    from kafka_chaos.checkers.model.config import ModelConfig
    from kafka_chaos.checkers.model.result import ModelResult
    from kafka_chaos.checkers.model.windows import Cause, Window
    cause = Cause("election p0 e4", int(T + end_s * S), "an unclean election of broker 3")
    w = Window(0, int(T + start_s * S), int(T + end_s * S), ("1", "all"), "unclean election of broker 3", cause)
    return ModelResult(ModelConfig("4.4.0", 1, 3, 2), [w], [], [], [])


def with_unwritten_offset(samples: pd.DataFrame, t_s: float) -> pd.DataFrame:
    """A sample before the stretch at which the stuck offset was not yet written (hw at it)."""
    first = pd.DataFrame({"t_ns": [int(T + t_s * S)], "partition": [0], "high_watermark": [286],
                          "last_stable_offset": [286]})
    return pd.concat([first, samples], ignore_index=True)


def test_a_loss_window_over_the_stuck_transactions_records_is_named_as_its_cause():
    samples = with_unwritten_offset(resting(40), 39.5)
    out = lso.find(samples, int(T + 39.5 * S), 20000, loss_model(38.0, 45.0))
    assert out["classification"].tolist() == ["violation"]            # an election never leaves a partition stuck
    assert out["cause_id"].tolist() == ["election p0 e4"] and out["excuse"].tolist() == ["loss_event"]
    assert out["cause_t_ns"].tolist() == [int(T + 45 * S)] and "election p0 e4" in out["reason"].iat[0]


def test_a_loss_window_before_the_stuck_transaction_existed_is_not_its_cause():
    # the same partition, an unclean election whose lost writes end 5 s before the transaction's first record
    out = lso.find(with_unwritten_offset(resting(40), 39.5), int(T + 39.5 * S), 20000, loss_model(10.0, 34.5))
    assert out["classification"].tolist() == ["violation"] and out["cause_id"].isna().all()
    assert "KAFKA-20716" not in out["reason"].iat[0]


def test_a_loss_window_ending_at_the_transactions_first_record_is_the_boundary():
    out = lso.find(with_unwritten_offset(resting(40), 39.5), int(T + 39.5 * S), 20000, loss_model(20.0, 39.5))
    assert out["cause_id"].tolist() == ["election p0 e4"]


def test_check_counts_the_bound_from_the_transaction_logs_isr_back(tmp_path):
    """Through `check`: the same stuck LSO is lso_stuck when the log's ISR was back 1 s after the heal, not when
    it was back 40 s after it."""
    for name, back_s, count in (("early", 21.0, 1), ("late", 60.0, 0)):
        run, _ = two_of_three_killed(tmp_path, back_s=[back_s, back_s + 30], name=name)
        pq.write_table(pa.Table.from_pandas(resting(65.0, lso_at=10, hw=40, start_s=15.0), schema=LSO_SCHEMA,
                                            preserve_index=False), run / "history/lso.parquet")
        meta = json.loads((run / "meta.json").read_text()) | {"eos": {"transaction_timeout_ms": TIMEOUT_MS}}
        (run / "meta.json").write_text(json.dumps(meta))
        _, v = check(run)
        assert v["anomalies"].get("lso_stuck", 0) == count, name


# -- ... and from when the stuck partition's own ISR can take the markers ------------------------------------------
# The markers are appended with requiredAcks = -1 (KafkaApis.handleWriteTxnMarkersRequest), refused below the
# topic's min.insync.replicas and resent (TransactionMarkerRequestCompletionHandler).

def judged_with_markers(markers_at_s):
    samples = resting(65.0, lso_at=10, hw=40, start_s=15.0)
    at = None if markers_at_s is None else int(T + markers_at_s * S)
    return lso.find(samples, int(T + HEAL_S * S), TIMEOUT_MS, markers={0: at})


def test_a_stuck_lso_on_a_partition_whose_isr_was_back_long_before_is_a_violation():
    out = judged_with_markers(21.0)
    assert out["classification"].tolist() == ["violation"] and "59.0 s of it after every fault" in out["reason"].iat[0]


def test_a_stuck_lso_on_a_partition_below_its_min_isr_until_late_is_allowed():
    assert judged_with_markers(60.0).empty and judged_with_markers(None).empty


@pytest.mark.parametrize("markers_at_s, stuck", [(45.0, False), (44.5, True)])
def test_the_boundary_is_the_bound_counted_from_the_partitions_isr_back(markers_at_s, stuck):
    out = judged_with_markers(markers_at_s)
    assert (not out.empty) is stuck
    assert not stuck or "its ISR had min.insync.replicas members again" in out["reason"].iat[0]


def test_the_markers_are_writable_from_the_first_sample_after_the_heal_with_min_isr_members(tmp_path):
    isr = [sample(t, 1, [1], hw=10) for t in range(10_000, 50_000, 500)]
    isr += [sample(t, 1, [1, 2], hw=10) for t in range(50_000, 90_000, 500)]
    isr += [sample(t, 1, [1], hw=10, partition=1) for t in range(10_000, 90_000, 500)]
    run = write_run(tmp_path / "mk", [send("a", offset=0, t=1000)], [], [], cluster=isr)
    assert lso.markers_writable(run, 2, int(T + 20 * S)) == {0: int(T + 50 * S), 1: None}
    assert lso.markers_writable(run, 1, int(T + 20 * S)) == {0: int(T + 20 * S), 1: int(T + 20 * S)}
    assert lso.markers_writable(tmp_path / "none", 2, int(T + 20 * S)) is None
