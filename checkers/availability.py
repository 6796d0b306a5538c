"""Availability as the clients saw it: per partition, the stretches in which writes waited and none was acked.

Measured from the sends alone, never from the model: a stall is a maximal interval with no acknowledgement on a
partition while at least one send to it was pending (invoked, not yet completed), longer than a threshold.
A send that timed out and a send acked late both make one; an idle producer does not.

Every finder (the pandas reference; a local check's numpy pass over the files, availability_files; Spark's job on a
cluster) reduces the sends to two small tables of 100 ms buckets first:
- acks: (partition, first, last) ack time of the acks=1/all `ok` sends completed in each bucket;
- pending: (partition, first invoke, last completion) of the acks=1/all sends invoked in each bucket, where a send
  that never completed counts as pending until the end of the run.
Each table is then merged into islands (spans no more than a bucket apart), so what crosses from Spark is where
acking or waiting stops, not a row per bucket. Gaps between acks are exact (within an island acks are at most
100 ms apart, below the smallest threshold allowed, 0.2 s); the pending cover is exact to one bucket. The model's
predicted unavailable windows are then subtracted to say how much of each stall Kafka's rules did not explain.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

BUCKET_NS = 100_000_000
DEFAULT_THRESHOLD_S = 2.0
NEVER = int(np.iinfo(np.int64).max)
FIRST = int(np.iinfo(np.int64).min)     # before any span


@dataclass(frozen=True)
class Stall:
    partition: int
    start_ns: int
    end_ns: int
    predicted_ns: int           # the part inside the model's predicted unavailable windows

    @property
    def seconds(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9

    @property
    def unpredicted_s(self) -> float:
        return (self.end_ns - self.start_ns - self.predicted_ns) / 1e9


def _merge(spans: list[tuple[int, int]], gap: int = 0) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + gap:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _intersect(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def stalls(acks: pd.DataFrame, pending: pd.DataFrame, predicted: list[tuple[int, int, int]],
           threshold_s: float = DEFAULT_THRESHOLD_S, end_ns: int | None = None) -> list[Stall]:
    """Stalls longer than `threshold_s`. acks: partition, first, last; pending: partition, first, last (last may
    be NEVER: not completed, pending until `end_ns`); predicted: (start, end, partition) windows."""
    threshold = int(threshold_s * 1e9)
    out: list[Stall] = []
    if not len(pending):
        return out
    run_end = end_ns if end_ns is not None else int(pending["first"].max())
    for p, waits in pending.groupby("partition"):
        p = int(p)
        last = waits["last"].to_numpy(dtype=np.int64)
        last = np.where(last == NEVER, max(run_end, int(waits["first"].max())), last)
        cover = _merge(list(zip(waits["first"].to_numpy(dtype=np.int64).tolist(), last.tolist())), BUCKET_NS)
        mine = acks[acks["partition"] == p].sort_values("first", kind="stable")
        ends = np.maximum.accumulate(mine["last"].to_numpy(dtype=np.int64)).tolist()
        # between one span of acks and the next (python ints: no overflow at the ends)
        gaps = [(a, b) for a, b in zip([-NEVER] + ends, mine["first"].astype("int64").tolist() + [NEVER])
                if b - a > threshold]
        windows = _merge([(s, e) for s, e, wp in predicted if int(wp) == p])
        for a, b in _intersect(gaps, cover):
            if b - a > threshold:
                inside = sum(hi - lo for lo, hi in _intersect([(a, b)], windows))
                out.append(Stall(p, a, b, inside))
    return sorted(out, key=lambda s: (s.start_ns, s.partition))


def summary(found: list[Stall], partitions: int, span_ns: int | None, threshold_s: float,
            max_stall_s: float | None) -> dict:
    """The `availability` object of verdict.json."""
    per = {}
    for p in range(partitions):
        mine = [s for s in found if s.partition == p]
        per[str(p)] = {"stalled_s": round(sum(s.seconds for s in mine), 3),
                       "unpredicted_s": round(sum(s.unpredicted_s for s in mine), 3),
                       "longest_s": round(max((s.seconds for s in mine), default=0.0), 3)}
    total = sum(s.seconds for s in found)
    denominator = partitions * span_ns / 1e9 if span_ns and partitions else 0.0
    return {
        "threshold_s": threshold_s, "max_stall_s": max_stall_s,
        "stalled_s": round(total, 3), "unpredicted_s": round(sum(s.unpredicted_s for s in found), 3),
        "longest_s": round(max((s.seconds for s in found), default=0.0), 3),
        "unavailable_share": round(total / denominator, 6) if denominator else 0.0,
        "partitions": per,
        "stalls": [[s.start_ns, s.end_ns, s.partition, round(s.unpredicted_s, 3)] for s in found],
    }


def islands(spans: pd.DataFrame, gap_ns: int = BUCKET_NS) -> pd.DataFrame:
    """(partition, first, last) spans merged per partition where one starts within gap_ns of the furthest end
    before it; what the Spark side (spark.queries.islands) sends across, so both engines hand over the same."""
    if not len(spans):
        return spans.reset_index(drop=True)
    s = spans.sort_values(["partition", "first", "last"], kind="stable").reset_index(drop=True)
    # shifted with an integer fill, not NaN: a float64 `before` is off by up to 256 ns at today's timestamps
    before = s.groupby("partition")["last"].transform(lambda x: x.cummax().shift(1, fill_value=FIRST))
    new = s["first"] - gap_ns > before
    island = new.astype("int64").groupby(s["partition"]).cumsum()
    return s.assign(island=island).groupby(["partition", "island"], as_index=False) \
        .agg(first=("first", "min"), last=("last", "max")).drop(columns="island")


def reference_buckets(sends: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two island tables from a sends frame (the pandas engine; Spark builds the same in one scan)."""
    acked = sends[sends["acks"].isin(["1", "all"]) & sends["partition"].notna()]
    ok = acked[(acked["outcome"] == "ok") & acked["t_complete_ns"].notna()]
    t = ok["t_complete_ns"].astype("int64")
    acks = pd.DataFrame({"partition": ok["partition"].astype("int64"), "b": t // BUCKET_NS, "t": t}) \
        .groupby(["partition", "b"])["t"].agg(first="min", last="max").reset_index().drop(columns="b")
    inv = acked["t_invoke_ns"].astype("int64")
    done = acked["t_complete_ns"].astype("Int64").fillna(NEVER).astype("int64")
    pending = pd.DataFrame({"partition": acked["partition"].astype("int64"), "b": inv // BUCKET_NS, "i": inv,
                            "c": done}).groupby(["partition", "b"]).agg(first=("i", "min"), last=("c", "max")) \
        .reset_index().drop(columns="b")
    return islands(acks), islands(pending)
