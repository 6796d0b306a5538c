"""A committed transactional record the ISR model keeps can still be lost with its COMMIT marker: the marker is a
record of its own, appended after the records and the client's commit, so an unclean election that elects a
replica without it loses it (a real cascade-kill run on 3.9.2: the records survived, the marker did not, and the
producer's next ABORT marker made them aborted). The rule (ModelResult.marker_loss_causes, Judge._lost) and its
counter-cases: the same loss is a violation for a producer without transactions, and for a record acked after the
loss window ended."""
import numpy as np
import pandas as pd

from kafka_chaos.checkers.completeness import Completeness
from kafka_chaos.checkers.model import ModelConfig, ModelResult, Window
from kafka_chaos.checkers.verdict import Judge
from kafka_chaos.history.meta import RunMeta

UNCLEAN = Window(partition=1, start_ns=100, end_ns=200, acks=("1", "all"),
                 reason="unclean election: uncleanly (broker 2, epoch 4) lacked writes of epoch 1")


def model() -> ModelResult:
    cfg = ModelConfig(kafka_version="3.9.2", partitions=3, replication_factor=3, min_insync_replicas=1,
                      acks=("all",))
    return ModelResult(cfg, risk=[UNCLEAN], unavailable=[], truncations=[], events=[])


def test_a_loss_window_ending_after_the_ack_may_hold_the_marker():
    causes = model().marker_loss_causes(pd.Series([1, 1, 1, 0]), pd.Series([50, 150, 250, 150]))
    assert [c is not None for c in causes] == [True, True, False, False]   # before or inside: yes; after, other: no


def lost(producer: str, ack: int) -> pd.DataFrame:
    return pd.DataFrame({"kind": ["lost"], "partition": [1], "offset": [286], "producer": [producer],
                         "acks": ["all"], "t_invoke_ns": [ack - 10], "t_complete_ns": [ack],
                         "t_read_ns": [np.nan]})


def judged(producer: str, ack: int, transactional=("e0",)):
    meta = RunMeta(run_id="r", partitions=3, replication_factor=3, min_insync_replicas=1, kafka_version="3.9.2",
                   producers=tuple({"name": n, "acks": "all", "transactional": n in transactional}
                                   for n in ("e0", "p0")))
    cls, why = Judge(meta, model(), Completeness(3)).rule(lost(producer, ack), np.array(["guaranteed"]),
                                                           np.array(["on every ISR member elected afterwards"]))
    return cls[0], why[0]


def test_a_committed_transactional_record_kept_by_the_model_but_lost_with_its_marker_is_allowed():
    cls, why = judged("e0", 150)
    assert cls == "allowed" and "COMMIT marker" in why and "unclean election" in why
    assert judged("e0-r1", 150)[0] == "allowed"            # a replacement processor of the same slot


def test_the_counter_cases_are_violations():
    assert judged("p0", 150)[0] == "violation"              # no transactions: its record is all there is
    assert judged("e0", 250)[0] == "violation"              # acked after the window: the marker came later
    assert judged("e0", 150, transactional=())[0] == "violation"
