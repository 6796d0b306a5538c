"""`txn_incomplete` (checkers/txns.py) is excused only by a loss event whose window holds what the transaction
appended on a partition the drain lacks a value of: its records (excuses.LOSS_EVENT, from the producer's previous
transaction's end to its own) or its COMMIT marker (txns.COMMIT_MARKER_LOST, from then to the markers' deadline
after its end, or the producer's next committed transaction, which could not begin before the markers were written:
CONCURRENT_TRANSACTIONS). Issue 48: a power loss 200 s after the commit excused it."""
import pandas as pd

from kafka_chaos.checkers import txns
from kafka_chaos.checkers.model import ModelConfig, ModelResult, Window
from kafka_chaos.checkers.model.windows import Cause

MS = 1_000_000
S = 1000 * MS
T = 1_700_000_000 * S
END = T + 10 * MS                      # transaction 0 (0-0..0-5 over 3 partitions) committed
DEADLINE = END + 5 * S                 # MARKER_SLACK_MS after it


def history(next_commit_ms: int | None = None) -> pd.DataFrame:
    rows = [dict(process=0, producer="p0", txn=0, first_seq=0, count=6, outcome="committed", error=None, t_ns=END)]
    if next_commit_ms is not None:
        rows.append(dict(process=0, producer="p0", txn=1, first_seq=6, count=6, outcome="committed", error=None,
                         t_ns=T + next_commit_ms * MS))
    return pd.DataFrame(rows)


def loss(start: int, end: int, partition: int = 1) -> Window:
    return Window(partition, start, end, ("1", "all"), "power loss of broker 2: its unflushed writes of epoch 1 "
                  "were gone", Cause("f4", end, "power loss of brokers 1, 2, 3"))


def found(*risk: Window, next_commit_ms: int | None = None) -> pd.Series:
    cfg = ModelConfig(kafka_version="4.1.0", partitions=3, replication_factor=3, min_insync_replicas=2,
                      acks=("all",))
    model = ModelResult(cfg, risk=list(risk), unavailable=[], truncations=[], events=[])
    finals = {f"0-{s}" for s in range(12)} - {"0-4"}                  # 0-4 (partition 1) is missing
    out = txns.find(history(next_commit_ms), finals, 3, model=model)
    assert out["kind"].tolist() == ["txn_incomplete"]
    return out.iloc[0]


def test_a_power_loss_200_s_after_the_commit_does_not_excuse_it():
    row = found(loss(T + 199 * S, T + 200 * S))
    assert row["classification"] == "violation" and row["excuse"] is None


def test_a_loss_holding_its_records_excuses_it_and_names_its_cause():
    row = found(loss(T + 2 * MS, T + 8 * MS))
    assert row["classification"] == "allowed" and "f4" in row["reason"]
    assert (row["excuse"], row["cause_id"], row["cause_t_ns"]) == ("loss_event", "f4", T + 8 * MS)


def test_a_loss_holding_its_commit_marker_excuses_it():
    row = found(loss(END + 2 * MS, END + 3 * S))
    assert row["classification"] == "allowed" and row["excuse"] == "txn.commit_marker_lost"


def test_the_markers_deadline_is_the_boundary():
    assert found(loss(DEADLINE, DEADLINE + S))["classification"] == "allowed"
    assert found(loss(DEADLINE + 1, DEADLINE + S))["classification"] == "violation"


def test_the_producers_next_committed_transaction_ends_the_markers_span():
    assert found(loss(END + 2 * S, END + 3 * S))["classification"] == "allowed"
    assert found(loss(END + 2 * S, END + 3 * S), next_commit_ms=1010)["classification"] == "violation"


def test_a_loss_on_a_partition_it_lacks_nothing_of_does_not_excuse_it():
    assert found(loss(T + 2 * MS, T + 8 * MS, partition=0))["classification"] == "violation"


def test_the_spans_of_a_producers_transactions():
    t = pd.concat([history(30), history(50).iloc[[1]].assign(txn=2, outcome="aborted", t_ns=T + 20 * MS)])
    spans = txns.spans(t.reset_index(drop=True))
    assert spans["began_ns"].tolist() == [END - 75 * S, T + 20 * MS, END]
    assert spans["next_commit_ns"].tolist()[0] == T + 30 * MS and pd.isna(spans["next_commit_ns"].iloc[1])
