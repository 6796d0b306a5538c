"""Claims as rows: the claim of a rule for each row's model window (window_claims), and the excuse, cause_id and
cause_t_ns columns anomalies.parquet carries (claim_columns). Rows one window excuses share one Claim."""
from __future__ import annotations

import numpy as np
import pandas as pd

from kafka_chaos.checkers import excuses


def window_claims(r: excuses.Rule, windows: np.ndarray, sent) -> np.ndarray:
    """Per row, the Claim of rule `r` blaming its window's cause (None: no window, or the timing refused): one Claim
    per window, shared by the rows it holds for; the timing is checked per row against the row's send time."""
    out = np.full(len(windows), None, dtype=object)
    has = np.asarray(windows != None, dtype=bool)    # noqa: E711 (elementwise)
    if not has.any():
        return out
    sent = pd.array(np.asarray(sent, dtype=object) if not isinstance(sent, pd.Series) else sent, dtype="Int64")
    known = ~np.asarray(sent.isna(), dtype=bool)
    t = np.asarray(sent.fillna(0), dtype=np.int64)
    at = np.flatnonzero(has)
    codes, _ = pd.factorize(np.fromiter(map(id, windows[at]), dtype=np.int64, count=len(at)))
    for code, first in zip(*np.unique(codes, return_index=True)):
        w = windows[at[first]]
        cause = w.cause or excuses.Cause(f"window p{w.partition} {w.start_ns}..{w.end_ns}", w.end_ns, w.reason)
        rows = at[codes == code]
        ok = r.holds_for_sends(cause, t[rows], known[rows])
        out[rows[ok]] = excuses.Claim(r, cause)
    return out


def no_claims(rows) -> np.ndarray:
    return np.full(len(rows), None, dtype=object)


def claim_columns(claims: np.ndarray) -> tuple[np.ndarray, np.ndarray, pd.Series]:
    """excuse, cause_id and cause_t_ns of each row from its Claim (None: no excuse). The rows a window excuses share
    one Claim object: the columns are built per distinct claim and spread by code."""
    n = len(claims)
    excuse, cause_id, t = np.full(n, None, dtype=object), np.full(n, None, dtype=object), np.zeros(n, dtype=np.int64)
    has = np.asarray(claims != None, dtype=bool)    # noqa: E711 (elementwise)
    at = np.flatnonzero(has)
    if len(at):
        some = claims[at]
        codes, _ = pd.factorize(np.fromiter(map(id, some), dtype=np.int64, count=len(some)))
        firsts = some[np.unique(codes, return_index=True)[1]]       # the claim of each code, in code order
        excuse[at] = np.array([c.rule.name for c in firsts], dtype=object)[codes]
        cause_id[at] = np.array([c.cause.id for c in firsts], dtype=object)[codes]
        t[at] = np.array([int(c.cause.t_ns) for c in firsts], dtype=np.int64)[codes]
    return excuse, cause_id, pd.Series(pd.arrays.IntegerArray(t, ~has), dtype="Int64")
