"""The availability island tables read straight from sends files, in numpy: a local check's share of the work that
needs no Spark.

The same two tables as `availability.reference_buckets` (and `spark.queries.availability_buckets`): per partition,
the 100 ms buckets of ack times and of pending sends, merged into islands. On one machine this is a reduction of a
few columns to a row per bucket, which numpy does in ~1 CPU-s on 10M sends where Spark's job took ~8 task-s (a
single-task scan and aggregation, then the islands' exchange and window). `anomalies` uses it for local checks only:
on a cluster the driver may not even see the files, and Spark's job runs there.

The file is read in batches (memory: one batch and a row per bucket), each reduced to per-bucket extremes; the
batches' rows are then reduced again, since a bucket may straddle two batches.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_chaos.checkers.availability import BUCKET_NS, NEVER
from kafka_chaos.history.schema import ACKED

BATCH_ROWS = 1 << 21
COLUMNS = ["partition", "acks", "outcome", "t_invoke_ns", "t_complete_ns"]
_LOWEST, _HIGHEST = np.iinfo(np.int64).min, np.iinfo(np.int64).max
_NONE = tuple(np.empty(0, np.int64) for _ in range(4))      # no bucket rows


def file_islands(sends_path: Path, batch_rows: int = BATCH_ROWS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(acks, pending) island tables, (partition, first, last) each, of one run's sends file."""
    acks, pending = [], []
    for batch in pq.ParquetFile(sends_path).iter_batches(batch_size=batch_rows, columns=COLUMNS):
        batch = batch.filter(pc.and_(pc.is_in(batch["acks"], pa.array(ACKED)), pc.is_valid(batch["partition"])))
        if not batch.num_rows:
            continue
        p = batch["partition"].to_numpy().astype(np.int64)
        invoked = batch["t_invoke_ns"].to_numpy()
        completed = batch["t_complete_ns"]
        done = pc.fill_null(completed, NEVER).to_numpy()          # never completed: pending to the end
        ok = pc.fill_null(pc.and_(pc.equal(batch["outcome"], "ok"), pc.is_valid(completed)), False) \
            .to_numpy(zero_copy_only=False)
        acked_at = done[ok]
        acks.append(bucket_extremes(p[ok], acked_at // BUCKET_NS, acked_at, acked_at))
        pending.append(bucket_extremes(p, invoked // BUCKET_NS, invoked, done))
    return tuple(islands(bucket_extremes(*(np.concatenate(c) for c in zip(*parts))) if parts else _NONE)
                 for parts in (acks, pending))


def bucket_extremes(p: np.ndarray, b: np.ndarray, first: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, ...]:
    """(p, b, min first, max last) per (p, b), sorted by (p, b). A dense table of cells where it is small (one
    `ufunc.at` pass each), else a sort."""
    if not len(p):
        return _NONE
    p0, b0 = p.min(), b.min()
    width = int(b.max() - b0) + 1
    cells = (int(p.max() - p0) + 1) * width
    if cells <= 2 * len(p) + 65536:        # at most ~34 bytes of cells per row, as the rows themselves
        key = (p - p0) * width + (b - b0)
        lo, hi = np.full(cells, _HIGHEST), np.full(cells, _LOWEST)
        np.minimum.at(lo, key, first)
        np.maximum.at(hi, key, last)
        seen = np.zeros(cells, bool)
        seen[key] = True
        cell = np.flatnonzero(seen)
        return cell // width + p0, cell % width + b0, lo[cell], hi[cell]
    order = np.lexsort((b, p))
    p, b = p[order], b[order]
    starts = np.flatnonzero(np.r_[True, (p[1:] != p[:-1]) | (b[1:] != b[:-1])])
    return p[starts], b[starts], np.minimum.reduceat(first[order], starts), np.maximum.reduceat(last[order], starts)


def islands(extremes: tuple[np.ndarray, ...], gap_ns: int = BUCKET_NS) -> pd.DataFrame:
    """`availability.islands` of bucket rows sorted by (p, b): as a bucket's times lie in the bucket, that is also
    the order of their first times, with no ties."""
    p, _, first, last = extremes
    out = []
    bounds = np.flatnonzero(np.r_[True, p[1:] != p[:-1], True]) if len(p) else np.array([0])
    for a, z in zip(bounds[:-1], bounds[1:]):
        f, lt = first[a:z], last[a:z]
        before = np.r_[_LOWEST, np.maximum.accumulate(lt)[:-1]]
        starts = np.flatnonzero(f - gap_ns > before)        # the first row always starts one (before: _LOWEST)
        out.append((np.full(len(starts), p[a]), np.minimum.reduceat(f, starts), np.maximum.reduceat(lt, starts)))
    cols = [np.concatenate(c) for c in zip(*out)] if out else [np.empty(0, np.int64)] * 3
    return pd.DataFrame(dict(zip(("partition", "first", "last"), cols))).astype("int64")


def runs_islands(runs: dict[str, Path]) -> pd.DataFrame:
    """(run, partition, pending, first, last) of every run, `run` its index in `runs`: the shape of
    `spark.queries.availability_buckets`' rows."""
    frames = []
    for index, run_dir in enumerate(runs.values()):
        acks, pending = file_islands(Path(run_dir) / "history" / "sends.parquet")
        frames += [acks.assign(run=index, pending=0), pending.assign(run=index, pending=1)]
    return pd.concat(frames, ignore_index=True)[["run", "partition", "pending", "first", "last"]]
