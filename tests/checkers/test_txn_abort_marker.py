"""An aborted record read (`failed_read` of a transactional producer's `_TXN_ABORTED` send) is a violation, except
where its transaction's ABORT marker was lost: an unclean election whose loss window holds the marker's append elects
a replica with the aborted records and no marker, and the producer's next COMMIT marker there commits them (the
mirror of the lost COMMIT marker, test_txn_markers.py). The excuse (txns.ABORT_MARKER_LOST, Judge._always) holds
only for a window covering the marker's append span: from the send to MARKER_SLACK_MS after abort_transaction
returned (the coordinator sends the markers as it answers EndTxn)."""
import numpy as np
import pandas as pd

from kafka_chaos.checkers.completeness import Completeness
from kafka_chaos.checkers.judge.rules import Judge, judge
from kafka_chaos.checkers.model import ModelConfig, ModelResult, Window
from kafka_chaos.checkers.model.windows import Cause
from kafka_chaos.history.meta import RunMeta

S = 1_000_000_000
SENT, ABORTED = 10 * S, 11 * S                  # the send, and abort_transaction returned
DEADLINE = ABORTED + 5 * S                       # MARKER_SLACK_MS after the abort


def election(start: int, end: int, partition: int = 1) -> Window:
    return Window(partition, start, end, ("1", "all"), "unclean election: uncleanly (broker 2, epoch 4) lacked "
                  "writes of epoch 3", Cause(f"election p{partition} e4", end + S // 10, "unclean election"))


def model(*risk: Window) -> ModelResult:
    cfg = ModelConfig(kafka_version="3.9.2", partitions=3, replication_factor=3, min_insync_replicas=1,
                      acks=("all",))
    return ModelResult(cfg, risk=list(risk), unavailable=[], truncations=[], events=[])


def meta(transactional=("p0",)) -> RunMeta:
    return RunMeta(run_id="r", partitions=3, replication_factor=3, min_insync_replicas=1, kafka_version="3.9.2",
                   producers=({"name": "p0", "acks": "all", "transactional": "p0" in transactional},))


def read_aborted(kind: str = "failed_read", read: int = 20 * S) -> pd.DataFrame:
    return pd.DataFrame({"kind": [kind], "partition": [1], "offset": [np.nan], "value": ["0-7"], "producer": ["p0"],
                         "acks": ["all"], "t_invoke_ns": [SENT], "t_complete_ns": [ABORTED], "t_read_ns": [read]})


def judged(*risk, transactional=("p0",), kind="failed_read", read=20 * S):
    cls, why, claims = Judge(meta(transactional), model(*risk), Completeness(3))._always(
        read_aborted(kind, read), None, None)
    return cls[0], why[0], claims[0]


def test_an_abort_marker_lost_in_the_unclean_elections_window_allows_the_aborted_read_and_names_the_election():
    cls, why, claim = judged(election(ABORTED + S, ABORTED + 2 * S))
    assert cls == "allowed" and "ABORT marker" in why and "election p1 e4" in why
    assert claim.columns() == {"excuse": "txn.abort_marker_lost", "cause_id": "election p1 e4",
                               "cause_t_ns": ABORTED + 2 * S + S // 10}


def test_the_same_election_after_the_markers_deadline_leaves_it_a_violation():
    cls, why, claim = judged(election(DEADLINE + S, DEADLINE + 2 * S))
    assert cls == "violation" and claim is None and "certainly failed" in why


def test_an_election_whose_window_ended_before_the_send_leaves_it_a_violation():
    assert judged(election(SENT - 2 * S, SENT - S))[0] == "violation"


def test_a_read_before_the_election_is_not_explained_by_it():
    inside = election(ABORTED + S, ABORTED + 2 * S)                   # its election at ABORTED + 2.1 s
    assert judged(inside, read=ABORTED + 2 * S + S // 10)[0] == "allowed"
    assert judged(inside, read=ABORTED + 2 * S + S // 10 - 1)[0] == "violation"


def test_the_markers_deadline_is_the_boundary():
    assert judged(election(DEADLINE, DEADLINE + S))[0] == "allowed"
    assert judged(election(DEADLINE + 1, DEADLINE + S))[0] == "violation"


def test_nothing_else_excuses_a_read_of_a_failed_send():
    inside = election(ABORTED + S, ABORTED + 2 * S)
    assert judged(inside, transactional=())[0] == "violation"                  # not an aborted transaction's
    assert judged(election(ABORTED + S, ABORTED + 2 * S, partition=0))[0] == "violation"    # another partition
    assert judged(inside, kind="phantom")[0] == "violation"                    # the other "always" kinds stay so


def test_the_judge_writes_the_excuse_and_its_cause():
    out = judge(read_aborted(), meta(), model(election(ABORTED + S, ABORTED + 2 * S)), Completeness(3))
    assert out["classification"].iloc[0] == "allowed"
    assert (out["excuse"].iloc[0], out["cause_id"].iloc[0]) == ("txn.abort_marker_lost", "election p1 e4")
    assert judge(read_aborted(), meta(), model(election(DEADLINE + 1, DEADLINE + S)),
                 Completeness(3))["classification"].iloc[0] == "violation"
