"""Look-ups in a local check's history files, on the driver: the candidates' send columns, and the reads at the
candidate positions, when there are many of them. (The check itself now looks up only sends: the reads at the
divergent positions' candidates are no longer needed since the pick finds those positions, checkers.divergent_files;
`read_rows` stays, tested against Spark's query, for a look-up by position.)

After the per-value pass of an anomaly-dense history, the check looks up ~580k sends by op_id and ~580k positions
in the reads (10M sends, bench `heavy`). Spark's way, a broadcast semi-join, first builds and ships a table of the
keys, then scans every row: ~7 s and ~4 s of the critical path, side by side. The same look-up here is one pass
over the file's batches, a row's membership one index into a table of booleans over the keys' range (Arrow's
hash-set `is_in` where that range is too wide). Local checks only, as
checkers.availability_files: on a cluster the driver may not even see the files.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_chaos.checkers.series_files import POS_SHIFT

BATCH_ROWS = 1 << 21       # memory: one batch of the columns looked at, and the rows found
MIN_KEYS = 50_000          # fewer keys: Spark's broadcast is the cheaper look-up (the file is read whole here)
ARROW = {"int": pa.int32(), "long": pa.int64(), "string": pa.string(), "boolean": pa.bool_()}
PANDAS = {pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype()}.get     # as checkers.spark.collect.to_pandas


def send_rows(runs: dict[str, Path], wanted: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """The sends of the wanted (run, op_id) pairs (run: the run's index in `runs`), with `columns` ({name:
    Spark type}, op_id among them) after `run`."""
    return _rows(runs, "sends.parquet", wanted, ["op_id"], columns)


def read_rows(runs: dict[str, Path], wanted: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """The reads at the wanted (run, partition, offset) positions, with `columns` (partition and offset among
    them) after `run`."""
    return _rows(runs, "reads.parquet", wanted, ["partition", "offset"], columns)


def _members(wanted: pd.DataFrame, keys: list[str]):
    """A function of a batch: which of its rows have one of the `wanted` keys (op_id, or partition and offset).
    Where the keys span a range not much larger than their number (op_ids, offsets per partition), a table of
    booleans over that range answers a row in one index, where Arrow's hash-set `is_in` took ~1 s per 10M rows
    (2/3 of looking up heavy's sends); else that hash set."""
    columns = [wanted[k].to_numpy("int64") for k in keys]
    width = int(columns[-1].max()) + 1 if len(keys) == 2 else 1        # offsets per partition, in the table
    low = [int(c.min()) for c in columns]
    span = (int(columns[0].max()) - low[0] + 1) * (width if len(keys) == 2 else 1)
    if (len(keys) == 2 and low[1] < 0) or span > 16 * len(wanted) + (1 << 24):
        packed = columns[0] * POS_SHIFT + columns[1] if len(keys) == 2 else columns[0]
        value_set = pa.array(np.unique(packed))
        return lambda batch: pc.is_in(_packed(batch, keys).cast(pa.int64()), value_set=value_set)
    table = np.zeros(span, bool)
    table[_cell(columns, low[0], width)] = True

    def member(batch) -> pa.Array:
        # a missing key as one below the table (op_id) or a negative offset: no member
        row = [pc.fill_null(batch[k], fill).to_numpy() for k, fill in zip(keys, (low[0] - 1, -1))]
        cell = _cell(row, low[0], width)
        inside = (cell >= 0) & (cell < span)
        if len(keys) == 2:
            inside &= (row[1] >= 0) & (row[1] < width)
        hit = np.zeros(len(cell), bool)
        hit[inside] = table[cell[inside]]
        return pa.array(hit)
    return member


def _cell(columns: list[np.ndarray], low: int, width: int) -> np.ndarray:
    """A key's index in `_members`' table: op_id - low, or (partition - low) * width + offset."""
    first = columns[0].astype(np.int64) - low
    return first if len(columns) == 1 else first * width + columns[1].astype(np.int64)


def _packed(batch, names: list[str]):
    """One long per row: op_id, or the packed position."""
    if len(names) == 1:
        return batch[names[0]]
    p, o = (batch[n] for n in names)
    return pc.add(pc.multiply(p.cast(pa.int64()), POS_SHIFT), o.cast(pa.int64()))


def _rows(runs: dict[str, Path], name: str, wanted: pd.DataFrame, keys: list[str],
          columns: dict[str, str]) -> pd.DataFrame:
    schema = pa.schema([("run", pa.int32()), *((c, ARROW[t]) for c, t in columns.items())])
    # strings of a few distinct values (producer, acks, outcome, phase) read as dictionaries; a value is unique
    labels = [c for c, t in columns.items() if t == "string" and c != "value"]
    found = []
    for index, run_dir in enumerate(runs.values()):
        mine = wanted[wanted["run"].astype("int64") == index]
        if not len(mine):
            continue
        member = _members(mine, keys)
        file = pq.ParquetFile(Path(run_dir) / "history" / name, read_dictionary=labels)
        for batch in file.iter_batches(batch_size=BATCH_ROWS, columns=list(columns)):
            hit = batch.filter(member(batch))
            if hit.num_rows:
                found.append(pa.table([pa.array(np.full(hit.num_rows, index, np.int32)),
                                       *(hit[c].cast(ARROW[t]) for c, t in columns.items())], schema=schema))
    table = pa.concat_tables(found) if found else schema.empty_table()
    return table.to_pandas(types_mapper=PANDAS)
