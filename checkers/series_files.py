"""Nonmonotonic sends and live consumers' poll gaps read straight from a local check's history files, in numpy.

Spark computes the nonmonotonic sends as a window over every ok send, sorted by series and invoke time, in one task
(queries.one_task): ~8-10 CPU-s on 10M sends, the check's longest single task, and the per-value pass waits for it
(its instances are flagged there). Here the same definition is a sort of a few integer columns: the series is
factorised to one integer, exactly (Spark hashes it), and the sends are sorted by (series, t_invoke_ns, op_id) in
numpy, which releases the GIL while it sorts. The poll gaps are the same kind of window over the live reads (~6-9
CPU-s in Spark, a single task that was the 10M check's last to end). Local checks only, as
checkers.availability_files: on a cluster the driver may not even see the files, and Spark's jobs
(queries.nonmonotonic_sends, queries.poll_gaps) run there.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq

POS_SHIFT = 1 << 40          # a position as one long, as queries.pos: partition * 2^40 + offset
COLUMNS = ["process", "producer", "partition", "offset", "outcome", "t_invoke_ns", "op_id"]
READ_COLUMNS = ["consumer", "seq", "phase", "partition", "offset"]


def nonmonotonic_sends(sends_path: Path) -> pd.DataFrame:
    """(op_id, partition, offset) of the ok sends acked at a lower offset than the previous send of their series
    (process, producer, partition) in (t_invoke_ns, op_id) order; a send without a partition is in partition -1."""
    table = pq.read_table(sends_path, columns=COLUMNS, read_dictionary=["producer", "outcome"])
    offset = table["offset"]
    ok = pc.fill_null(pc.and_(pc.equal(table["outcome"], "ok"), pc.greater_equal(offset, 0)), False)
    table = table.filter(ok).unify_dictionaries()      # one dictionary: the chunks' producer codes agree
    if not table.num_rows:
        return _frame(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64))
    partition = pc.fill_null(table["partition"], -1).to_numpy().astype(np.int64)
    offset = table["offset"].to_numpy().astype(np.int64)
    producer = np.concatenate([chunk.indices.to_numpy() for chunk in table["producer"].chunks]).astype(np.int64)
    series = _series(table["process"].to_numpy().astype(np.int64), producer, partition)
    op_id = table["op_id"].to_numpy().astype(np.int64)
    order = _series_order(series, table["t_invoke_ns"].to_numpy().astype(np.int64), op_id)
    pos = (partition * POS_SHIFT + offset)[order]
    s = series[order]
    lower = np.flatnonzero((s[1:] == s[:-1]) & (pos[1:] < pos[:-1])) + 1
    at = order[lower]
    return _frame(op_id[at], partition[at], offset[at])


def _series(*columns: np.ndarray) -> np.ndarray:
    """One integer per row's tuple of `columns` (integers), equal exactly when the tuples are: packed in mixed
    radix over their ranges (a few processes, producers, consumers and partitions: far from 2^62), re-numbered
    densely whenever the next column would overflow that."""
    key = np.zeros(len(columns[0]), np.int64)
    for column in columns:
        low, span = int(column.min()), int(column.max()) - int(column.min()) + 1
        if int(key.max(initial=0)) + 1 > (2**62) // span:
            _, key = np.unique(key, return_inverse=True)      # re-number what there is so far: dense again
            key = key.astype(np.int64).reshape(-1)
        key = key * span + (column - low)
    return key


def poll_gaps(reads_path: Path) -> pd.DataFrame:
    """Steps a -> b > a + 1 of a live consumer through a partition in seq order: (consumer, seq of b, partition,
    b as offset, a as from_offset), queries.poll_gaps' rows with the consumer's name for its stream."""
    table = pq.read_table(reads_path, columns=READ_COLUMNS, read_dictionary=["consumer", "phase"])
    table = table.filter(pc.equal(table["phase"], "live")).unify_dictionaries()
    if not table.num_rows:
        return pd.DataFrame({"consumer": pd.Series(dtype=object), **{c: pd.Series(dtype="int64") for c in
                                                                       ("seq", "partition", "offset", "from_offset")}})
    consumer = np.concatenate([chunk.indices.to_numpy() for chunk in table["consumer"].chunks]).astype(np.int64)
    partition = table["partition"].to_numpy().astype(np.int64)
    seq, offset = (table[c].to_numpy().astype(np.int64) for c in ("seq", "offset"))
    stream = _series(consumer, partition)
    order = _by_series(stream)
    s, q = stream[order], seq[order]
    if not bool(np.all((s[1:] != s[:-1]) | (q[1:] >= q[:-1]))):     # the file is not in seq order per consumer
        order = np.lexsort((seq, stream))
        s = stream[order]
    o = offset[order]
    gap = np.flatnonzero((s[1:] == s[:-1]) & (o[1:] > o[:-1] + 1)) + 1
    at = order[gap]
    names = table["consumer"].chunks[0].dictionary.to_numpy(zero_copy_only=False)
    return pd.DataFrame({"consumer": names[consumer[at]], "seq": seq[at], "partition": partition[at],
                         "offset": offset[at], "from_offset": o[gap - 1]})


def _series_order(series: np.ndarray, t_invoke: np.ndarray, op_id: np.ndarray) -> np.ndarray:
    """The row order by (series, t_invoke, op_id). A sends file is written in invoke order (checked, not assumed):
    then a stable sort by series alone keeps the rest, and on a few thousand series numpy's radix sort of 16-bit
    keys does it in a fraction of the general sort (~4 s for three 64-bit keys on 10M sends)."""
    dt = np.diff(t_invoke)
    if bool(np.all((dt > 0) | ((dt == 0) & (np.diff(op_id) > 0)))):
        return _by_series(series)
    return np.lexsort((op_id, t_invoke, series))


def _by_series(series: np.ndarray) -> np.ndarray:
    """A stable sort of the rows by series (`_series`): numpy's radix sort where the numbers fit 16 bits."""
    if int(series.max()) >= 2**15:
        _, series = np.unique(series, return_inverse=True)
        series = series.reshape(-1)
    if int(series.max()) < 2**15:
        series = series.astype(np.int16)
    return np.argsort(series, kind="stable")


def _frame(op_id: np.ndarray, partition: np.ndarray, offset: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"op_id": op_id, "partition": partition, "offset": offset})


def runs_nonmonotonic_sends(runs: dict[str, Path]) -> pd.DataFrame:
    """(run, op_id, partition, offset) of every run, `run` its index in `runs`: queries.nonmonotonic_sends' rows."""
    frames = [nonmonotonic_sends(Path(d) / "history" / "sends.parquet").assign(run=i)
              for i, d in enumerate(runs.values())]
    return pd.concat(frames, ignore_index=True)[["run", "op_id", "partition", "offset"]].astype("int64")


def runs_poll_gaps(runs: dict[str, Path]) -> pd.DataFrame:
    """(run, consumer, seq, partition, offset, from_offset) of every run, `run` its index in `runs`."""
    frames = [poll_gaps(Path(d) / "history" / "reads.parquet").assign(run=i) for i, d in enumerate(runs.values())]
    return pd.concat(frames, ignore_index=True)[["run", "consumer", "seq", "partition", "offset", "from_offset"]]
