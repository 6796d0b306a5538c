"""The bucket sums' counts read straight from a local check's history files, in numpy: what a local check takes
from the buckets, now that it picks the per-value pass's rows position by position (checkers.narrow_files).

checkers.spark.buckets sums, per offset bucket, the acked sends and the reads (counts, hashes of (value, offset), a
mask of the acked offsets), and on a cluster the per-value pass then runs on the unclean buckets alone. A local
check needs the sums for the rest only: the sends' and reads' summaries, the acked offsets' masks and the crowded
buckets (an offset acked twice). Those come from counts alone, integer and dictionary columns: ~1 CPU-s on 10M
sends, where Spark's sums took 12-15. These are `bucket_sums`' rows (run, partition, bucket, kind, code, n, mask)
with the hashes lo and hi at 0: judged with them a bucket is unclean by its counts alone, which nothing narrows by.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_chaos.checkers.spark.buckets import BUCKET, FINAL, LIVE, SEND, UNPLACED
from kafka_chaos.checkers.spark.queries import ACKED_CODES, ACKS, OK, OUTCOMES, SUMMARY_STRIDE

SEND_COLUMNS = ["partition", "offset", "outcome", "acks", "idempotent"]
READ_COLUMNS = ["partition", "offset", "phase"]
DICTIONARIES = ["outcome", "acks", "phase"]     # string columns of a few values, read as dictionaries
COLUMNS = ["run", "partition", "bucket", "kind", "code", "n", "lo", "hi", "mask"]
BATCH_ROWS = 1 << 20        # rows per batch read: its arrays are reused from batch to batch, not faulted in anew
_SHIFT = BUCKET.bit_length() - 1
assert BUCKET == 1 << _SHIFT, "a bucket is a power of two offsets: a shift and a mask find it"


def runs_bucket_counts(runs: dict[str, Path]) -> pd.DataFrame:
    """`bucket_counts` of every run, `run` its index in `runs`, read from its files."""
    return pd.concat([bucket_counts(_batches(Path(d) / "history" / "sends.parquet", SEND_COLUMNS, DICTIONARIES),
                                    _batches(Path(d) / "history" / "reads.parquet", READ_COLUMNS, DICTIONARIES))
                      .assign(run=i) for i, d in enumerate(runs.values())], ignore_index=True)[COLUMNS]


def bucket_counts(send_batches, read_batches) -> pd.DataFrame:
    """buckets.bucket_sums' rows of one run (without `run`), the hashes lo and hi at 0, from its sends' and reads'
    record batches (outcome, acks and phase read as dictionaries: DICTIONARIES). Each batch is reduced to its cells,
    and the cells of every batch once more (a bucket may straddle two batches)."""
    sent, unplaced = [], []
    for batch in send_batches:
        outcome, acks = dictionary_codes(batch["outcome"], OUTCOMES), dictionary_codes(batch["acks"], ACKS)
        idempotent = pc.fill_null(pc.cast(batch["idempotent"], pa.int8()), 2).to_numpy()
        code = (outcome * (len(ACKS) + 1) + acks) * SUMMARY_STRIDE + idempotent
        p, o, valid = _position(batch)
        placed = (outcome == OK) & np.logical_or.reduce([acks == c for c in ACKED_CODES]) & valid & (o >= 0)
        unplaced.append(code[~placed])
        p, o = p[placed], o[placed]
        sent.append(_cells((p, o >> _SHIFT, code[placed]), bits=np.left_shift(np.uint64(1), (o & (BUCKET - 1))
                                                                               .astype(np.uint64))))
    codes, n = np.unique(np.concatenate(unplaced), return_counts=True) if unplaced else (_none(), _none())
    sp, sb, scode, sn, smask = _cells(*_joined(sent))
    parts = [(np.full(len(n), UNPLACED), codes, n, None, None, None),
             (np.full(len(sn), SEND), scode, sn, sp, sb, smask)]
    read = []
    for batch in read_batches:      # validated: every read has a position and phase
        kind = np.where(dictionary_codes(batch["phase"], ("final",)) == 0, FINAL, LIVE)     # any other phase is live
        read.append(_cells((batch["partition"].to_numpy().astype(np.int64), batch["offset"].to_numpy() >> _SHIFT,
                            kind)))
    rp, rb, rk, rn, _ = _cells(*_joined(read))
    parts.append((rk, np.zeros(len(rn), np.int64), rn, rp, rb, None))
    return _frame(parts)


def _batches(path: Path, columns: list[str], dictionaries: list[str]):
    return pq.ParquetFile(path, read_dictionary=[c for c in dictionaries if c in columns]) \
        .iter_batches(batch_size=BATCH_ROWS, columns=columns)


def _none() -> np.ndarray:
    return np.empty(0, np.int64)


def _joined(cells: list[tuple]) -> tuple:
    """The batches' cells as one set of rows: (keys, counts, masks) for `_cells` to reduce again."""
    if not cells:
        return (_none(), _none(), _none()), _none(), None
    keys = tuple(np.concatenate([c[i] for c in cells]) for i in range(3))
    bits = np.concatenate([c[4] for c in cells]).view(np.uint64) if cells[0][4] is not None else None
    return keys, np.concatenate([c[3] for c in cells]), bits


def _frame(parts: list[tuple]) -> pd.DataFrame:
    """The rows of (kind, code, n, partition, bucket, mask) parts, a None column all null."""
    def column(i: int, dtype: str) -> pd.api.extensions.ExtensionArray:
        values = np.concatenate([part[i] if part[i] is not None else np.zeros(len(part[2]), np.int64)
                                 for part in parts]).astype(np.int64)
        nulls = np.concatenate([np.full(len(part[2]), part[i] is None) for part in parts])
        return pd.arrays.IntegerArray(values, nulls).astype(dtype)
    n = np.concatenate([part[2] for part in parts]).astype(np.int64)
    zeros = np.zeros(len(n), np.int64)
    return pd.DataFrame({"partition": column(3, "Int32"), "bucket": column(4, "Int64"),
                         "kind": column(0, "int32"), "code": column(1, "int32"), "n": n, "lo": zeros, "hi": zeros,
                         "mask": column(5, "Int64")})


def dictionary_codes(column: pa.Array, names: tuple[str, ...]) -> np.ndarray:
    """Per row of a dictionary column, the index of its string in `names`; len(names) for any other string or none
    (queries._index_of)."""
    lookup = pc.fill_null(pc.index_in(column.dictionary, value_set=pa.array(names)), len(names)).to_numpy()
    lookup = np.append(lookup, len(names)).astype(np.int64)          # the last entry: a null's
    return lookup[pc.fill_null(column.indices, len(column.dictionary)).to_numpy()]


def column_codes(column: pa.ChunkedArray, names: tuple[str, ...]) -> np.ndarray:
    """`dictionary_codes` of a dictionary column's chunks, or of a plain string column's."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)
    chunks = [dictionary_codes(chunk, names) for chunk in column.chunks]
    return np.concatenate(chunks) if chunks else np.zeros(0, np.int64)


def _position(batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(partition, offset, both present) per row, a missing number as -1."""
    valid = pc.and_(pc.is_valid(batch["partition"]), pc.is_valid(batch["offset"])).to_numpy(zero_copy_only=False)
    partition, offset = (pc.fill_null(batch[c], -1).to_numpy().astype(np.int64) for c in ("partition", "offset"))
    return partition, offset, valid


def _cells(keys: tuple[np.ndarray, np.ndarray, np.ndarray], n: np.ndarray | None = None,
           bits: np.ndarray | None = None) -> tuple:
    """(k0, k1, k2, n, mask) arrays, a row per distinct key (k0, k1, k2): how many rows (or the sum of their `n`),
    and the OR of their `bits` (None without). A dense table of cells where it is small, else a sort."""
    if not len(keys[0]):
        return _none(), _none(), _none(), _none(), (_none() if bits is not None else None)
    low = [int(k.min()) for k in keys]
    span = [int(k.max()) - lo + 1 for k, lo in zip(keys, low)]
    cells = span[0] * span[1] * span[2]
    dense = cells <= 4 * len(keys[0]) + 65536
    if dense:
        cell = (keys[0] - low[0]) * span[1]
        cell += keys[1] - low[1]
        cell *= span[2]
        cell += keys[2] - low[2]
    else:
        found, cell = np.unique(np.stack(keys), axis=1, return_inverse=True)
        cell, cells = cell.reshape(-1), found.shape[1]
    count = np.bincount(cell, minlength=cells) if n is None else \
        np.bincount(cell, weights=n, minlength=cells).astype(np.int64)     # exact: sums far below 2^53
    present = np.flatnonzero(count)
    found = [at + lo for at, lo in zip(np.unravel_index(present, span), low)] if dense else list(found)
    if bits is None:
        return (*found, count[present], None)
    mask = np.zeros(cells, np.uint64)
    np.bitwise_or.at(mask, cell, bits)
    return (*found, count[present], mask[present].view(np.int64))
