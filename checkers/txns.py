"""Transactions (--transactions): committed transactions the final drain holds only in part, not at all, or out of
the order they were written.

Kafka's transactions are atomic: once EndTxn(COMMIT) succeeded, every write of the transaction is visible to a
read_committed reader, and after an abort none is (KIP-98, "Transactional Messaging in Kafka"; the coordinator
writes the markers to every partition of the transaction, TransactionCoordinator / TransactionMarkerChannelManager).
The read of an aborted write needs no new kind: its send is journaled `fail` with error `_TXN_ABORTED`, so a
read_committed consumer that sees it shows up as `failed_read`, a violation unless the transaction's ABORT marker
was lost (ABORT_MARKER_LOST, judged in checkers/judge/rules.py). This module adds `txn_incomplete` (one instance per
transaction): a committed transaction some of whose values the final drain of a completed partition lacks. A
violation unless a loss event the model predicts removed them: a loss window of a missing value's partition that
covers the records' append span (excuses.LOSS_EVENT), or the span in which the transaction's COMMIT marker was
appended there (COMMIT_MARKER_LOST): from the transaction's start to the markers' deadline
(ModelResult.markers_written_by) or the producer's next committed transaction. A loss anywhere else in the run
removed other records. The transaction rules the model does not replay (a zombie producer fenced by its epoch;
KIP-890's server-side defence on 4.x, which also bumps the epoch per transaction) cannot make a committed write
disappear, so they excuse nothing here.

`txn_out_of_order` (one instance per transaction and partition): a committed transaction's writes to one partition
that the final drain holds at offsets not increasing in the order they were sent. Kafka promises that a producer's
records to one partition are appended in the order they were sent (documentation, "Guarantees"), and for an
idempotent or transactional producer the leader enforces it: a batch is appended only if its first sequence number
follows the last one of the same producer id and epoch, else OutOfOrderSequenceException
(ProducerAppendInfo.checkSequence / inSequence, storage/.../internals/log/ProducerAppendInfo.java). A committed
transaction is written under one producer id and epoch (an epoch bump aborts the open transaction; KIP-890's bump
comes with the end marker), and the client numbers a partition's records in send order. A truncation (an unclean
election, a power loss) removes records but does not reorder those left, so nothing excuses this kind: it is always
a violation. Values at two positions are `duplicate`s already; each value's lowest offset is the one compared.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.dataset as ds

from kafka_chaos.checkers import excuses
from kafka_chaos.checkers.excuses import NO_CLAIM, Cause, Times
from kafka_chaos.checkers.instances import rows_frame
from kafka_chaos.history.eos import ABORT_INTERVAL_MS, abort_bound_ms

TXNS_FILE = "history/txns.parquet"
DEFAULT_TIMEOUT_MS = 60000          # librdkafka's and the Java client's transaction.timeout.ms
CLAIM_COLUMNS = ["excuse", "cause_id", "cause_t_ns"]
COLUMNS = ["kind", "partition", "offset", "value", "producer", "t_complete_ns", "classification", "reason",
           *CLAIM_COLUMNS]

_MARKER = ("the transaction coordinator writes a transaction's markers after the client's EndTxn "
           "(TransactionCoordinator.handleEndTransaction, once PREPARE_COMMIT/PREPARE_ABORT is in its log) with "
           "requiredAcks = -1 (KafkaApis.handleWriteTxnMarkersRequest), retrying NOT_LEADER_OR_FOLLOWER and "
           "NOT_ENOUGH_REPLICAS (TransactionMarkerRequestCompletionHandler), and the producer's next transaction "
           "cannot add a partition before they are written (TransactionCoordinator.handleAddPartitionsToTransaction: "
           "CONCURRENT_TRANSACTIONS); the marker is a record the leader appends, so a loss event whose window holds "
           "its append (PartitionChangeBuilder.electLeader outside the ISR/ELR, or a power loss that cut the elected "
           "log; UnifiedLog.truncateTo) removes it")
_MARKER_TIMING = ("the loss window's lost span meets the marker's append span (from the commit or abort call to "
                  "the markers' deadline, ModelResult.markers_written_by) and the event came after the call")


def _after_the_call(cause: Cause, times: Times) -> bool:
    """The loss event came after the earliest time the marker could be appended (the EndTxn call)."""
    return times.committed is None or cause.t_ns >= times.committed


def _before_the_read(cause: Cause, times: Times) -> bool:
    """As _after_the_call, and the loss came no later than the read it explains (with the marker, never visible)."""
    return _after_the_call(cause, times) and (times.read is None or cause.t_ns <= times.read)


COMMIT_MARKER_LOST = excuses.rule(
    "txn.commit_marker_lost", ("lost", "txn_incomplete", "eos_lost"),
    _MARKER + "; a read_committed reader sees a transaction's records only behind its COMMIT marker, and without it "
    "the producer's next marker on the partition ends the transaction (an ABORT: read as aborted; KIP-98, "
    "ProducerAppendInfo.appendEndTxnMarker)", _MARKER_TIMING, _after_the_call)

ABORT_MARKER_LOST = excuses.rule(
    "txn.abort_marker_lost", ("failed_read", "g1a"),
    _MARKER + "; the elected replica then holds the aborted records without their ABORT marker, as part of an "
    "open transaction that the producer's next COMMIT marker on the partition commits (ProducerAppendInfo."
    "appendEndTxnMarker: a marker of an epoch no lower ends the transaction its producer id has open there, from "
    "currentTxnFirstOffset, and the next transaction's records join it, appendDataBatch); before the loss the "
    "leader held the marker, and a read_committed reader never saw the records",
    _MARKER_TIMING + ", and no later than the aborted record's first read", _before_the_read)


def timeout_ms(extra: dict) -> int:
    """The transactional producers' transaction.timeout.ms (meta.json's eos settings, else the clients' default)."""
    return int(((extra or {}).get("eos") or {}).get("transaction_timeout_ms") or DEFAULT_TIMEOUT_MS)


def latest_commit_ns(extra: dict, began_ns):
    """The latest a transaction begun by began_ns can have had its commit taken: a transaction open longer than
    transaction.timeout.ms is aborted on the coordinator's next abort pass (TransactionStateManager.
    timedOutTransactions, TransactionCoordinator.abortTimedOutTransactions)."""
    return began_ns + (timeout_ms(extra) + ABORT_INTERVAL_MS) * 1_000_000


def window_cause(w) -> Cause:
    """A loss window's cause (the election or power loss), or the window itself where the model named none."""
    return w.cause or Cause(f"window p{w.partition} {w.start_ns}..{w.end_ns}", w.end_ns, w.reason)


def marker_claims(rule: excuses.Rule, model, partition, t_lo_ns, t_hi_ns, read_ns=None) -> np.ndarray:
    """Per row, `rule`'s Claim that a loss window of the partition held a marker appended in [t_lo_ns, t_hi_ns]
    (ModelResult.marker_loss_causes), or None. read_ns: the first read the loss must explain (None: none)."""
    out = np.full(len(partition), None, dtype=object)
    if model is None or not len(out):
        return out
    lo, hi = np.asarray(t_lo_ns, dtype=np.int64), np.asarray(t_hi_ns, dtype=np.int64)
    reads = [None] * len(out) if read_ns is None else [None if pd.isna(r) else int(r) for r in read_ns]
    windows = model.marker_loss_causes(partition, lo, hi)
    for i in np.flatnonzero(windows != None):      # noqa: E711 (elementwise)
        out[i] = excuses.claim(rule, window_cause(windows[i]),
                               Times(committed=int(lo[i]), answered=int(hi[i]), read=reads[i]))
    return out


def read_txns(run_dir: Path | str) -> pd.DataFrame | None:
    path = Path(run_dir) / TXNS_FILE
    return ds.dataset(str(path)).to_table().to_pandas() if path.exists() else None


def spans(txns: pd.DataFrame, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> pd.DataFrame:
    """Per transaction (txns' index): `began_ns`, no earlier than its records were sent (its producer's previous
    transaction had ended; else the coordinator's abort bound before its end, a longer one being aborted,
    TransactionStateManager.timedOutTransactions) and `next_commit_ns`, the end of the producer's next committed
    transaction (by then its markers were written: CONCURRENT_TRANSACTIONS; NaN: none)."""
    t = txns.sort_values("t_ns", kind="stable")
    end = t["t_ns"].astype("Int64")                   # nullable: a shifted int64 would be float64, rounded
    keys = [t["process"], t["producer"]]
    began = end.groupby(keys, sort=False).shift(1).fillna(end - abort_bound_ms(timeout_ms) * 1_000_000)
    committed = end.where(t["outcome"] == "committed")
    nxt = committed.groupby(keys, sort=False).shift(-1).groupby(keys, sort=False).bfill()
    return pd.DataFrame({"began_ns": began.astype("int64"), "next_commit_ns": nxt}).reindex(txns.index)


def _claim(t, missing_partitions: list[int], model, began: int, next_commit) -> excuses.Claim | None:
    """The first excuse of a missing write: its records' loss, else its COMMIT marker's on a missing partition."""
    for p in missing_partitions:
        if c := excuses.loss_claim(model, p, began, int(t.t_ns)):
            return c
    if model is None:
        return None
    parts = np.array(missing_partitions, dtype=np.int64)
    hi = model.markers_written_by(parts, np.full(len(parts), int(t.t_ns), dtype=np.int64))
    if not pd.isna(next_commit):
        hi = np.minimum(hi, int(next_commit))
    found = marker_claims(COMMIT_MARKER_LOST, model, parts, np.full(len(parts), began, dtype=np.int64), hi)
    return next((c for c in found if c is not None), None)


def find(txns: pd.DataFrame, final_values: set[str], partitions: int, incomplete=(), model=None) -> pd.DataFrame:
    """Judged `txn_incomplete` rows. `final_values`: every value of the final drain; `incomplete`: partitions whose
    drain did not complete (a transaction touching one is not judged)."""
    out = []
    bounds = spans(txns)
    for i, t in zip(txns.index, txns.itertuples(index=False)):
        if t.outcome != "committed":
            continue
        seqs = range(int(t.first_seq), int(t.first_seq) + int(t.count))
        if {s % partitions for s in seqs} & set(incomplete):
            continue
        missing = [s for s in seqs if f"{t.process}-{s}" not in final_values]
        if not missing:
            continue
        what = (f"transaction {t.txn} of producer {t.producer} committed {t.count} writes; the final drain lacks "
                f"{len(missing)} of them (first {t.process}-{missing[0]})")
        claim = _claim(t, sorted({s % partitions for s in missing}), model, int(bounds.at[i, "began_ns"]),
                       bounds.at[i, "next_commit_ns"])
        cls, why = ("allowed", f"; {claim.reason()}") if claim else (
            "violation", "; a committed transaction is visible whole to read_committed readers (KIP-98), and no "
            "loss event the model predicts holds its records or its COMMIT marker")
        out.append({"kind": "txn_incomplete", "partition": None, "offset": None, "value": f"{t.process}-{missing[0]}",
                    "producer": t.producer, "t_complete_ns": int(t.t_ns), "classification": cls,
                    "reason": what + why} | (claim.columns() if claim else NO_CLAIM))
    return rows_frame(out, COLUMNS)


def out_of_order(txns: pd.DataFrame, final: pd.DataFrame, incomplete=()) -> pd.DataFrame:
    """Judged `txn_out_of_order` rows. `final`: the final drain's reads (partition, offset, value); `incomplete`:
    partitions whose drain did not complete (not judged)."""
    committed = txns[txns["outcome"] == "committed"]
    cols = COLUMNS
    if committed.empty or final.empty:
        return rows_frame([], cols)
    parts = final["value"].str.extract(r"^(\d+)-(\d+)$")
    r = final.assign(process=pd.to_numeric(parts[0]), seq=pd.to_numeric(parts[1])).dropna(subset=["process"])
    r = r[~r["partition"].isin(list(incomplete))]
    r = r.sort_values("offset", kind="stable").drop_duplicates("value")          # each value's lowest offset
    out = []
    for process, mine in committed.groupby("process"):
        mine = mine.sort_values("first_seq")
        got = r[r["process"] == process]
        first = mine["first_seq"].to_numpy(np.int64)
        i = np.searchsorted(first, got["seq"].to_numpy(np.int64), side="right") - 1
        inside = (i >= 0) & (got["seq"].to_numpy(np.int64) < first[np.maximum(i, 0)]
                             + mine["count"].to_numpy(np.int64)[np.maximum(i, 0)])
        got = got[inside].assign(row=i[inside]).sort_values(["row", "partition", "seq"], kind="stable")
        for (row, partition), g in got.groupby(["row", "partition"], sort=True):
            offsets = g["offset"].to_numpy(np.int64)
            bad = np.flatnonzero(np.diff(offsets) <= 0)
            if not len(bad):
                continue
            t, j = mine.iloc[int(row)], int(bad[0])
            early, late = g.iloc[j], g.iloc[j + 1]
            out.append({"kind": "txn_out_of_order", "partition": int(partition), "offset": int(late["offset"]),
                        "value": late["value"], "producer": t["producer"], "t_complete_ns": int(t["t_ns"]),
                        "classification": "violation",
                        "reason": f"transaction {int(t['txn'])} of producer {t['producer']} (committed) wrote "
                                  f"{early['value']} before {late['value']} to partition {int(partition)}, and the "
                                  f"final drain holds {late['value']} at offset {int(late['offset'])}, not after "
                                  f"{early['value']} at offset {int(early['offset'])} ({len(bad)} such step(s) in "
                                  "this partition); a producer's writes to a partition are appended in the order "
                                  "sent, enforced per producer id and epoch by the leader's sequence check "
                                  "(ProducerAppendInfo.checkSequence)"} | NO_CLAIM)
    return rows_frame(out, cols)
