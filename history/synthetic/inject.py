"""Anomaly injection: each recipe adds exactly k instances of one kind to a clean synthetic history, so a test
knows the answer before the checker computes it."""
from __future__ import annotations

import numpy as np
import pandas as pd

from kafka_chaos.history.synthetic.clock import START_NS


def inject_anomalies(sends: pd.DataFrame, reads: pd.DataFrame, inject: dict[str, int],
                     rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return copies of a clean history with exactly `inject[kind]` instances of each kind added.

    Recipes touch disjoint writes, so several kinds can be injected at once without interfering.
    """
    sends, reads = sends.copy(), reads.copy()
    used: set[str] = set()
    for kind, k in inject.items():
        if k:
            sends, reads = _RECIPES[kind](sends, reads, k, rng, used)
    return sends.reset_index(drop=True), reads.reset_index(drop=True)


def _pick(rng, candidates: pd.DataFrame, k: int, used: set[str], what: str) -> pd.DataFrame:
    candidates = candidates[~candidates["value"].isin(used)]
    if len(candidates) < k:
        raise ValueError(f"cannot inject {k} {what}: only {len(candidates)} candidates")
    chosen = candidates.iloc[np.sort(rng.choice(len(candidates), k, replace=False))]
    used.update(chosen["value"])
    return chosen


def _end_offsets(reads: pd.DataFrame) -> dict[int, int]:
    return reads.groupby("partition")["offset"].max().to_dict()


def _acked_with_offset(sends: pd.DataFrame, reads: pd.DataFrame) -> pd.DataFrame:
    """ok sends with a known offset that are not the last record of their partition, with a live read."""
    end = _end_offsets(reads)
    live_values = set(reads.loc[reads["phase"] == "live", "value"])
    ok = sends[(sends["outcome"] == "ok") & sends["offset"].notna()]
    return ok[(ok["offset"] < ok["partition"].map(end).fillna(-1)) & ok["value"].isin(live_values)]


def _extra_final_reads(reads: pd.DataFrame, rows: list[tuple[int, int, str]]) -> pd.DataFrame:
    """Append final-drain reads at the given (partition, offset, value) positions."""
    final = reads[reads["consumer"] == "final"]
    seq0 = int(final["seq"].max()) + 1 if len(final) else 0
    t0 = int(reads["t_ns"].max()) + 1 if len(reads) else START_NS
    extra = pd.DataFrame({
        "consumer": "final", "seq": np.arange(seq0, seq0 + len(rows), dtype=np.int64), "phase": "final",
        "partition": np.array([r[0] for r in rows], dtype=np.int32),
        "offset": np.array([r[1] for r in rows], dtype=np.int64), "key": None,
        "value": [r[2] for r in rows], "t_ns": t0 + np.arange(len(rows), dtype=np.int64)}
    ).astype(reads.dtypes.to_dict())
    return pd.concat([reads, extra], ignore_index=True)


def _beyond_end(reads: pd.DataFrame, p: int, j: int) -> int:
    return int(_end_offsets(reads).get(p, -1)) + 1000 + j


def _new_sends(sends: pd.DataFrame, rows: list[dict]) -> pd.DataFrame:
    op0 = int(sends["op_id"].max()) + 1 if len(sends) else 0
    t0 = int(sends["t_invoke_ns"].max()) + 1 if len(sends) else START_NS
    extra = pd.DataFrame([{
        "op_id": op0 + i, "process": 0, "producer": "p0", "acks": "all", "idempotent": True, "key": None,
        "offset": None, "error": None, "t_invoke_ns": t0 + i, "t_complete_ns": t0 + i + 1_000_000, **r}
        for i, r in enumerate(rows)]).astype(sends.dtypes.to_dict())
    return pd.concat([sends, extra], ignore_index=True)


def _inject_lost(sends, reads, k, rng, used):
    chosen = _pick(rng, _acked_with_offset(sends, reads), k, used, "lost writes")
    return sends, reads[~reads["value"].isin(chosen["value"])]


def _inject_duplicate(sends, reads, k, rng, used):
    chosen = _pick(rng, _acked_with_offset(sends, reads), k, used, "duplicates")
    rows = [(int(p), _beyond_end(reads, int(p), j), v)
            for j, (p, v) in enumerate(zip(chosen["partition"], chosen["value"]))]
    return sends, _extra_final_reads(reads, rows)


def _inject_phantom(sends, reads, k, rng, used):
    rows = [(0, _beyond_end(reads, 0, j), f"phantom-{j}") for j in range(k)]
    return sends, _extra_final_reads(reads, rows)


def _inject_divergent(sends, reads, k, rng, used):
    live = reads[reads["phase"] == "live"].drop_duplicates(["partition", "offset"])
    chosen = _pick(rng, live, k, used, "divergent positions")
    new_values = [f"divergent-{j}" for j in range(k)]
    used.update(new_values)          # a later recipe (poll_skip) must not drop the rewritten read
    reads = reads.copy()
    reads.loc[chosen.index, "value"] = new_values
    sends = _new_sends(sends, [{"value": v, "partition": int(p), "outcome": "info", "error": "_MSG_TIMED_OUT"}
                               for v, p in zip(new_values, chosen["partition"])])
    return sends, reads


def _inject_failed_read(sends, reads, k, rng, used):
    values = [f"failed-{j}" for j in range(k)]
    sends = _new_sends(sends, [{"value": v, "partition": 0, "outcome": "fail", "error": "NOT_ENOUGH_REPLICAS"}
                               for v in values])
    return sends, _extra_final_reads(reads, [(0, _beyond_end(reads, 0, j), v) for j, v in enumerate(values)])


def _inject_offset_mismatch(sends, reads, k, rng, used):
    chosen = _pick(rng, _acked_with_offset(sends, reads), k, used, "offset mismatches")
    moved = reads["value"].isin(chosen["value"])
    reads = reads[~(moved & (reads["phase"] == "live"))].copy()
    for j, (p, v) in enumerate(zip(chosen["partition"], chosen["value"])):
        reads.loc[(reads["value"] == v) & (reads["phase"] == "final"), "offset"] = _beyond_end(reads, int(p), j)
    return sends, reads


def _inject_nonmonotonic_send(sends, reads, k, rng, used):
    ok = sends[(sends["outcome"] == "ok") & sends["offset"].notna()].sort_values(["t_invoke_ns", "op_id"])
    pairs = []
    for _, g in ok.groupby(["process", "producer", "partition"], sort=False):
        idx = list(g.index)
        pairs += [(idx[i], idx[i + 1]) for i in range(0, len(idx) - 1, 2)]
    pairs = [pr for pr in pairs if not {sends.at[pr[0], "value"], sends.at[pr[1], "value"]} & used]
    if len(pairs) < k:
        raise ValueError(f"cannot inject {k} nonmonotonic sends: only {len(pairs)} candidate pairs")
    sends, reads = sends.copy(), reads.copy()
    for a, b in (pairs[i] for i in np.sort(rng.choice(len(pairs), k, replace=False))):
        va, vb = sends.at[a, "value"], sends.at[b, "value"]
        used.update((va, vb))
        sends.loc[a, "offset"], sends.loc[b, "offset"] = sends.at[b, "offset"], sends.at[a, "offset"]
        in_a, in_b = reads["value"] == va, reads["value"] == vb
        reads.loc[in_a, "value"], reads.loc[in_b, "value"] = vb, va
    return sends, reads


def _inject_poll_skip(sends, reads, k, rng, used):
    live = reads[reads["phase"] == "live"].sort_values(["consumer", "partition", "seq"])
    candidates = []
    for _, g in live.groupby(["consumer", "partition"], sort=False):
        idx = list(g.index)
        candidates += idx[1:-1:2]    # every other inner read: removals never touch the same step
    pool = live.loc[candidates]
    chosen = _pick(rng, pool, k, used, "poll skips")
    return sends, reads.drop(index=chosen.index)


def _inject_recovered(sends, reads, k, rng, used):
    values = [f"recovered-{j}" for j in range(k)]
    sends = _new_sends(sends, [{"value": v, "partition": 0, "outcome": "info", "error": "_MSG_TIMED_OUT"}
                               for v in values])
    return sends, _extra_final_reads(reads, [(0, _beyond_end(reads, 0, j), v) for j, v in enumerate(values)])


_RECIPES = {
    "lost": _inject_lost, "duplicate": _inject_duplicate, "phantom": _inject_phantom,
    "divergent": _inject_divergent, "failed_read": _inject_failed_read,
    "offset_mismatch": _inject_offset_mismatch, "nonmonotonic_send": _inject_nonmonotonic_send,
    "poll_skip": _inject_poll_skip, "recovered": _inject_recovered,
}
