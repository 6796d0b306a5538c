"""Transactions (--transactions): committed transactions the final drain holds only in part, not at all, or out of
the order they were written.

Kafka's transactions are atomic: once EndTxn(COMMIT) succeeded, every write of the transaction is visible to a
read_committed reader, and after an abort none is (KIP-98, "Transactional Messaging in Kafka"; the coordinator
writes the markers to every partition of the transaction, TransactionCoordinator / TransactionMarkerChannelManager).
The read of an aborted write needs no new kind: its send is journaled `fail` with error `_TXN_ABORTED`, so a
read_committed consumer that sees it shows up as `failed_read`, always a violation. This module adds
`txn_incomplete` (one instance per transaction): a committed transaction some of whose values the final drain of a
completed partition lacks. A violation unless the model predicts an unclean election or power loss on a partition
it spans (which may remove committed records, markers included). The transaction rules the model does not replay
(a zombie producer fenced by its epoch; KIP-890's server-side defence on 4.x, which also bumps the epoch per
transaction) cannot make a committed write disappear, so they excuse nothing here.

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

from kafka_chaos.checkers.groups import destructive_cause
from kafka_chaos.checkers.instances import rows_frame

TXNS_FILE = "history/txns.parquet"


def read_txns(run_dir: Path | str) -> pd.DataFrame | None:
    path = Path(run_dir) / TXNS_FILE
    return ds.dataset(str(path)).to_table().to_pandas() if path.exists() else None


def find(txns: pd.DataFrame, final_values: set[str], partitions: int, incomplete=(), model=None) -> pd.DataFrame:
    """Judged `txn_incomplete` rows. `final_values`: every value of the final drain; `incomplete`: partitions whose
    drain did not complete (a transaction touching one is not judged)."""
    out = []
    for t in txns[txns["outcome"] == "committed"].itertuples(index=False):
        seqs = range(int(t.first_seq), int(t.first_seq) + int(t.count))
        spans = {s % partitions for s in seqs}
        if spans & set(incomplete):
            continue
        missing = [s for s in seqs if f"{t.process}-{s}" not in final_values]
        if not missing:
            continue
        what = (f"transaction {t.txn} of producer {t.producer} committed {t.count} writes; the final drain lacks "
                f"{len(missing)} of them (first {t.process}-{missing[0]})")
        cause = next((c for p in sorted(spans) if (c := destructive_cause(model, p))), None)
        cls, why = ("allowed", f"; allowed: {cause}") if cause else (
            "violation", "; a committed transaction is visible whole to read_committed readers (KIP-98)")
        out.append({"kind": "txn_incomplete", "partition": None, "offset": None, "value": f"{t.process}-{missing[0]}",
                    "producer": t.producer, "t_complete_ns": int(t.t_ns), "classification": cls,
                    "reason": what + why})
    return rows_frame(out, ["kind", "partition", "offset", "value", "producer", "t_complete_ns", "classification",
                            "reason"])


def out_of_order(txns: pd.DataFrame, final: pd.DataFrame, incomplete=()) -> pd.DataFrame:
    """Judged `txn_out_of_order` rows. `final`: the final drain's reads (partition, offset, value); `incomplete`:
    partitions whose drain did not complete (not judged)."""
    committed = txns[txns["outcome"] == "committed"]
    cols = ["kind", "partition", "offset", "value", "producer", "t_complete_ns", "classification", "reason"]
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
                                  "(ProducerAppendInfo.checkSequence)"})
    return rows_frame(out, cols)
