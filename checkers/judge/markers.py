"""Claims that a transactional record's marker may be missing: a COMMIT marker for a lost committed record, an ABORT
marker for a read aborted one (txns.COMMIT_MARKER_LOST, txns.ABORT_MARKER_LOST), each bounded by when the
coordinator wrote the markers (ModelResult.markers_written_by)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from kafka_chaos.checkers import txns
from kafka_chaos.checkers.model import ModelResult
from kafka_chaos.history.meta import RunMeta


def marker_reasons(claims: np.ndarray) -> np.ndarray:
    """The reason of each COMMIT marker claim (None where none)."""
    out = np.full(len(claims), None, dtype=object)
    for i in np.flatnonzero(claims != None):    # noqa: E711 (elementwise)
        out[i] = "its transaction's COMMIT marker, appended after its records and its ack, may be missing on the " \
                 "elected replica: " + claims[i].reason()
    return out


def _transactional(meta: RunMeta, rows: pd.DataFrame) -> np.ndarray:
    """Rows of a transactional producer's sends (a replacement processor "<name>-r<n>" is its slot's)."""
    names = {p.get("name") for p in meta.producers if p.get("transactional")}
    if not names or not len(rows):
        return np.zeros(len(rows), dtype=bool)
    base = rows["producer"].astype(object).map(lambda n: str(n).split("-r")[0] if n is not None else None)
    return base.isin(names).to_numpy(dtype=bool)


def _known(*cols) -> np.ndarray:
    return np.logical_and.reduce([c.notna().to_numpy(dtype=bool) for c in cols])


def commit_marker_claims(model: ModelResult, meta: RunMeta, rows: pd.DataFrame) -> np.ndarray:
    """Per `lost` row, txns.COMMIT_MARKER_LOST's Claim (None: none). The marker's append span: from the record's ack
    (the commit came after the flush) to the markers' deadline after the latest the commit can have been taken,
    transaction.timeout.ms plus the abort interval after the transaction began (a longer one is aborted,
    TransactionStateManager.timedOutTransactions; it began before this record)."""
    out = np.full(len(rows), None, dtype=object)
    at = np.flatnonzero(_transactional(meta, rows) & _known(rows["partition"], rows["t_complete_ns"]))
    if not len(at):
        return out
    part = rows["partition"].to_numpy()[at].astype(np.int64)
    ack = rows["t_complete_ns"].to_numpy()[at].astype(np.int64)
    answered = txns.latest_commit_ns(meta.extra, ack)
    out[at] = txns.marker_claims(txns.COMMIT_MARKER_LOST, model, part, ack, model.markers_written_by(part, answered))
    return out


def abort_marker_claims(model: ModelResult, meta: RunMeta, rows: pd.DataFrame) -> np.ndarray:
    """Per `failed_read` row, txns.ABORT_MARKER_LOST's Claim (None: none). A transactional producer's `fail` send
    is `_TXN_ABORTED` (docs/history.md); its completion is journaled once abort_transaction returned, so the
    coordinator had sent the ABORT markers by then: the marker's append span is from the send to the markers'
    deadline after that (ModelResult.markers_written_by)."""
    out = np.full(len(rows), None, dtype=object)
    at = np.flatnonzero(_transactional(meta, rows) & _known(rows["partition"], rows["t_invoke_ns"],
                                                            rows["t_complete_ns"]))
    if not len(at):
        return out
    part = rows["partition"].to_numpy()[at].astype(np.int64)
    sent = rows["t_invoke_ns"].to_numpy()[at].astype(np.int64)
    done = rows["t_complete_ns"].to_numpy()[at].astype(np.int64)
    out[at] = txns.marker_claims(txns.ABORT_MARKER_LOST, model, part, sent, model.markers_written_by(part, done),
                                 rows["t_read_ns"].to_numpy()[at])
    return out
