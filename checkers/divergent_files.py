"""Divergent positions of a local check, from the reads its driver picked (checkers.narrow_files), in numpy.

A position the pick leaves out is clean: one send acked there and every read there of that send's value, so one
value. Every other position keeps all of its reads. So the positions read with two or more values are exactly
those among the picked reads, and `divergent.several_values` over them is the divergent kind, whole: no candidate
positions to name from the per-value pass (divergent.known_positions), no look-up of the reads there, no pass
over every read of a run that acknowledged acks=0 writes. On the anomaly-dense bench history that was ~0.6 s of
pandas and look-ups after Spark's pass, on the check's longest path; here it is part of the pick, beside the writes.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kafka_chaos.checkers.series_files import POS_SHIFT

COLUMNS = ["partition", "offset", "value", "multiplicity", "t_read_ns"]


def several_values(reads: pa.Table) -> pd.DataFrame:
    """divergent.several_values' rows of one run's `reads` (partition, offset, value, t_ns): per position read
    with two or more distinct values, the least value (byte order, as Spark and pandas compare strings), how many
    distinct values, the first read."""
    if not reads.num_rows:
        return _frame(np.empty(0, np.int64), pa.array([], pa.string()), np.empty(0, np.int64),
                      np.empty(0, np.int64))
    position = reads["partition"].to_numpy().astype(np.int64) * POS_SHIFT + reads["offset"].to_numpy()
    encoded = pc.dictionary_encode(reads["value"]).combine_chunks()
    words = encoded.dictionary
    by_value = pc.sort_indices(words).to_numpy()               # the dictionary's indices in sorted order
    rank = np.empty(len(words), np.int64)                       # each distinct value's place in that order
    rank[by_value] = np.arange(len(words))
    code = rank[encoded.indices.to_numpy()]
    order = np.lexsort((code, position))                        # by position, least value first
    pos, code = position[order], code[order]
    new_pos = np.r_[True, pos[1:] != pos[:-1]]
    starts = np.flatnonzero(new_pos)
    distinct = np.add.reduceat((new_pos | np.r_[True, code[1:] != code[:-1]]).astype(np.int64), starts)
    several = distinct >= 2
    if not several.any():
        return _frame(np.empty(0, np.int64), pa.array([], pa.string()), np.empty(0, np.int64),
                      np.empty(0, np.int64))
    first_read = np.minimum.reduceat(reads["t_ns"].to_numpy()[order], starts)
    least = by_value[code[starts[several]]]                     # the dictionary's index of each least value
    return _frame(pos[starts[several]], words.take(pa.array(least)), distinct[several], first_read[several])


def _frame(position: np.ndarray, value: pa.Array, multiplicity: np.ndarray, first_read: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"partition": position // POS_SHIFT, "offset": position % POS_SHIFT,
                         "value": value.to_numpy(zero_copy_only=False), "multiplicity": multiplicity,
                         "t_read_ns": first_read})
