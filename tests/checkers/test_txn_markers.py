"""A committed transactional record the ISR model keeps can still be lost with its COMMIT marker: the marker is a
record of its own, appended by the coordinator after the client's commit (a real cascade-kill run on 3.9.2: the
records survived an unclean election, the marker did not, and the producer's next ABORT marker made them aborted).
The excuse (txns.COMMIT_MARKER_LOST, ModelResult.marker_loss_causes, Judge.marker_lost) holds only for a loss window
that covers the marker's append span: from the record's ack to the markers' deadline after the latest the commit
can have been taken (transaction.timeout.ms + the abort interval, then MARKER_SLACK_MS, moved past the partition's
unavailability). Issue 48: a whole-cluster power loss 200 s after the commit excused a write acked at 0.05 s."""
import numpy as np
import pandas as pd

from kafka_chaos.checkers.completeness import Completeness
from kafka_chaos.checkers.judge.markers import commit_marker_claims
from kafka_chaos.checkers.judge.rules import Judge, judge
from kafka_chaos.checkers.model import ModelConfig, ModelResult, Window
from kafka_chaos.checkers.model.windows import Cause
from kafka_chaos.history.meta import RunMeta

S = 1_000_000_000
ACK = S // 20                                   # acked at 0.05 s
DEADLINE = ACK + (60_000 + 10_000 + 5_000) * 1_000_000    # timeout + abort interval, then the markers' slack


def power_loss(start: int, end: int, partition: int = 1) -> Window:
    return Window(partition, start, end, ("1", "all"), "power loss of broker 2: its unflushed writes of epoch 1 "
                  "were gone", Cause("f3", end, "power loss of brokers 1, 2, 3"))


def model(*risk: Window, unavailable=()) -> ModelResult:
    cfg = ModelConfig(kafka_version="4.1.0", partitions=3, replication_factor=3, min_insync_replicas=2,
                      acks=("all",))
    return ModelResult(cfg, risk=list(risk), unavailable=list(unavailable), truncations=[], events=[])


def meta(transactional=("e0",)) -> RunMeta:
    return RunMeta(run_id="r", partitions=3, replication_factor=3, min_insync_replicas=2, kafka_version="4.1.0",
                   producers=tuple({"name": n, "acks": "all", "transactional": n in transactional}
                                   for n in ("e0", "p0")))


def lost(producer: str = "e0", ack: int = ACK) -> pd.DataFrame:
    return pd.DataFrame({"kind": ["lost"], "partition": [1], "offset": [286], "producer": [producer],
                         "acks": ["all"], "t_invoke_ns": [ack - 10], "t_complete_ns": [ack],
                         "t_read_ns": [np.nan]})


def marker(m: ModelResult, producer: str = "e0", transactional=("e0",)):
    return Judge(meta(transactional), m, Completeness(3)).marker_lost(lost(producer))[0]


def test_a_power_loss_200_s_after_the_commit_does_not_excuse_a_write_acked_at_50_ms():
    assert marker(model(power_loss(199 * S, 200 * S))) is None


def test_a_loss_window_holding_the_markers_append_excuses_it_and_names_its_cause():
    why = marker(model(power_loss(ACK + 10 * S // 1000, S)))
    assert "COMMIT marker" in why and "txn.commit_marker_lost" in why and "f3" in why
    claim = commit_marker_claims(model(power_loss(ACK + 1, S)), meta(), lost())[0]
    assert claim.columns() == {"excuse": "txn.commit_marker_lost", "cause_id": "f3", "cause_t_ns": S}
    assert marker(model(power_loss(ACK + 1, S)), producer="e0-r1") is not None    # a replacement of the same slot


def test_the_markers_deadline_is_the_boundary():
    assert marker(model(power_loss(DEADLINE, DEADLINE + S))) is not None
    assert marker(model(power_loss(DEADLINE + 1, DEADLINE + S))) is None


def test_unavailability_of_the_partition_moves_the_deadline():
    late = power_loss(DEADLINE + 30 * S, DEADLINE + 31 * S)
    assert marker(model(late)) is None
    down = Window(1, DEADLINE - S, DEADLINE + 40 * S, ("all",), "no leader")
    assert marker(model(late, unavailable=[down])) is not None
    other = Window(0, DEADLINE - S, DEADLINE + 40 * S, ("all",), "no leader")
    assert marker(model(late, unavailable=[other])) is None


def test_a_window_that_ended_before_the_ack_or_on_another_partition_does_not_excuse_it():
    assert marker(model(power_loss(0, ACK - S // 100))) is None
    assert marker(model(power_loss(ACK + 1, S, partition=0))) is None


def test_without_transactions_nothing_excuses_it():
    assert marker(model(power_loss(ACK + 1, S)), producer="p0") is None
    assert marker(model(power_loss(ACK + 1, S)), transactional=()) is None


def test_the_judge_classes_the_lost_write_by_the_markers_span():
    def judged(*risk):
        out = judge(lost(), meta(), model(*risk), Completeness(3))
        return out["classification"].iloc[0], out["reason"].iloc[0]
    assert judged(power_loss(199 * S, 200 * S))[0] == "violation"
    cls, why = judged(power_loss(ACK + 1, S))
    assert cls == "allowed" and "txn.commit_marker_lost" in why


def test_marker_loss_causes_returns_the_window_meeting_the_span_opened_after_its_start():
    w = power_loss(100, 200)
    got = model(w).marker_loss_causes(pd.Series([1, 1, 1, 0, 1]), pd.Series([50, 150, 250, 150, 150]),
                                      pd.Series([120, 300, 300, 300, None]))
    assert [g is w for g in got] == [True, True, False, False, False]
    early = Window(1, 100, 300, ("1", "all"), "unclean election", Cause("election p1 e4", 210, "election"))
    assert model(early).marker_loss_causes([1], [211], [400])[0] is None      # its event came before the marker
    assert model(early).marker_loss_causes([1], [210], [400])[0] is early
