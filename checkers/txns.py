"""Transactions (--transactions): committed transactions the final drain holds only in part, or not at all.

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
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds

from kafka_chaos.checkers.groups import destructive_cause

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
    return pd.DataFrame(out, columns=["kind", "partition", "offset", "value", "producer", "t_complete_ns",
                                      "classification", "reason"])
