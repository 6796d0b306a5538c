"""Look-ups in a local check's history files, on the driver: the candidates' send columns, and the reads at the
candidate positions, when there are many of them.

After the per-value pass of an anomaly-dense history, the check looks up ~580k sends by op_id and ~580k positions
in the reads (10M sends, bench `heavy`). Spark's way, a broadcast semi-join, first builds and ships a table of the
keys, then scans every row: ~7 s and ~4 s of the critical path, side by side. The same look-up here is one pass
over the file's batches with Arrow's hash-set membership (`is_in`). Local checks only, as
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


def _key(frame, names: list[str]):
    """One long per row: op_id, or the packed position."""
    if len(names) == 1:
        return frame[names[0]]
    p, o = (frame[n] for n in names)
    if isinstance(frame, pd.DataFrame):
        return p.to_numpy("int64") * POS_SHIFT + o.to_numpy("int64")
    return pc.add(pc.multiply(p.cast(pa.int64()), POS_SHIFT), o.cast(pa.int64()))


def _rows(runs: dict[str, Path], name: str, wanted: pd.DataFrame, keys: list[str],
          columns: dict[str, str]) -> pd.DataFrame:
    schema = pa.schema([("run", pa.int32()), *((c, ARROW[t]) for c, t in columns.items())])
    found = []
    for index, run_dir in enumerate(runs.values()):
        mine = wanted[wanted["run"].astype("int64") == index]
        if not len(mine):
            continue
        value_set = pa.array(np.unique(np.asarray(_key(mine, keys), dtype="int64")))
        for batch in pq.ParquetFile(Path(run_dir) / "history" / name).iter_batches(batch_size=BATCH_ROWS,
                                                                                     columns=list(columns)):
            hit = batch.filter(pc.is_in(_key(batch, keys).cast(pa.int64()), value_set=value_set))
            if hit.num_rows:
                found.append(pa.table([pa.array(np.full(hit.num_rows, index, np.int32)),
                                       *(hit[c].cast(ARROW[t]) for c, t in columns.items())], schema=schema))
    table = pa.concat_tables(found) if found else schema.empty_table()
    return table.to_pandas(types_mapper=PANDAS)
