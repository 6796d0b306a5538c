"""The per-value pass's aggregation over the rows a local check's driver picked, in Arrow, written for Spark.

hub.value_summary groups a history's sends and reads by (run, value) in Spark: the send's code, op_id and
position, the extremes of its reads and the phases that read them. On the rows the driver already holds after its
pick (checkers.narrow_files) that exchange and hash aggregation was most of the per-value pass's cost: a cold JVM,
1.7M rows of the anomaly-dense bench history, 3.8-5.3 s to the rows' return; Arrow's group_by takes 0.4 s of them
on the driver, and Spark then reads the summary (SCHEMA, the same columns and types as hub.value_summary's) and
applies the kinds' predicates to it (hub.candidates_of_summary), the one place they are written. A cluster's check,
which never gathers the rows, keeps Spark's aggregation.

The driver keeps each copied run's summary, numbered by a `row` column, so Spark's answer is only the row numbers
and the flags of the candidates (hub.candidates_of_summary's `slim`); `candidate_rows` puts the rest of each row
back from the summary, where 26 columns of 584k rows came through Arrow from a cold JVM before.

The summary names the ambiguous values (read at two positions) before Spark's pass runs, so their exact per-value
columns are computed here too (checkers.exact_files) and Spark applies the predicates to them beside the per-value
pass (queries.candidates_of_per_value), instead of after it and its look-ups.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_chaos.checkers import exact_files
from kafka_chaos.checkers.bucket_files import column_codes
from kafka_chaos.checkers.lookup_files import ARROW, PANDAS
from kafka_chaos.checkers.spark.queries import ACKS, OUTCOMES, POS_BITS, POS_SHIFT

NAME = "summary.parquet"
LIVE, FINAL = 1, 2             # hub's `phases` bits
SCHEMA = {"value": "string", "code": "int", "op_id": "long", "s_p": "int", "s_o": "long", "n_reads": "long",
          "r_min": "long", "r_max": "long", "t_read": "long", "phases": "int"}    # Spark's types, `run` added
FILE_SCHEMA = {**SCHEMA, "row": "long"}     # the file's: `row` numbers the summary's rows (candidate_rows)
TASKS = 4                      # row groups of a summary: Spark splits a file of a few MB between the cores only there


def write_summary(sends: pa.Table, reads: pa.Table, history: Path) -> tuple[pa.Table, pd.DataFrame]:
    """hub.value_summary's rows of one run's `sends` (value, partition, offset, outcome, acks, op_id) and `reads`
    (value, partition, offset, phase, t_ns), numbered (`row`) and written uncompressed to history/NAME; and the
    exact per-value columns of its ambiguous values (read at two positions or more: hub's k_ambiguous, decided by
    the three-level definitions) to history/exact_files.NAME, from their rows, whole, as the pick keeps every
    value. Returns the summary and the (partition, offset) those values were read at."""
    out = value_summary(sends, reads)
    out = out.append_column("row", pa.array(np.arange(out.num_rows, dtype=np.int64)))
    pq.write_table(out, history / NAME, compression="none", row_group_size=max(1, -(-out.num_rows // TASKS)))
    ambiguous = out.filter(pc.fill_null(pc.not_equal(out["r_min"], out["r_max"]), False))["value"]
    amb_reads = reads.filter(pc.is_in(reads["value"], value_set=ambiguous))
    exact = exact_files.per_value_exact(sends.filter(pc.is_in(sends["value"], value_set=ambiguous)), amb_reads)
    pq.write_table(exact, history / exact_files.NAME)
    return out, amb_reads.select(["partition", "offset"]).to_pandas().astype("int64").drop_duplicates()


def candidate_rows(summary: pa.Table, flags: pd.DataFrame) -> pd.DataFrame:
    """hub.candidates_of_summary's rows of one run, in its column order and with the dtypes Spark's answer has
    (collect.to_pandas), from its slim answer `flags` (run, row, lar_p, lar_o and the k_ flags, `row` numbering
    `summary`'s rows) and `summary` (`write_summary`'s table): the columns hub's select derives from the summary
    alone, unpacked here the same way. Only the flags then cross from the JVM: heavy's 584k candidates came back
    0.5-1 s sooner (2026-11-29)."""
    at = summary.take(pa.array(flags["row"].to_numpy("int64")))
    first, last = _unpacked(at["r_min"]), _unpacked(at["r_max"])
    out = {"run": flags["run"].array, "value": at["value"].to_numpy(zero_copy_only=False),
           "op_id": _ints(at["op_id"]), "n": pd.array((at["n_reads"].to_numpy() > 0).astype(np.int64), "Int64"),
           "partition": first[0], "offset": first[1], "t_read": _ints(at["t_read"]),
           "lar_p": flags["lar_p"].array, "lar_o": flags["lar_o"].array,
           "last_p": last[0], "last_o": last[1], "n_reads": _ints(at["n_reads"]), "code": _ints(at["code"]),
           "s_p": _ints(at["s_p"]), "s_o": _ints(at["s_o"])}
    frame = pd.DataFrame(out)
    for c in flags.columns:
        if c.startswith("k_"):
            frame[c] = flags[c].to_numpy()
    return frame


def _ints(column: pa.ChunkedArray):
    """A nullable integer column as collect.to_pandas gives it."""
    return column.to_pandas(types_mapper=PANDAS).array


def _unpacked(packed: pa.ChunkedArray):
    """(partition, offset) of packed positions (queries.pos), nulls kept: queries.partition_of and offset_of."""
    return (_ints(pc.cast(pc.shift_right(packed, POS_BITS), pa.int32())),
            _ints(pc.bit_wise_and(packed, POS_SHIFT - 1)))


def value_summary(sends: pa.Table, reads: pa.Table) -> pa.Table:
    """Per value: code (max of the send's 1 + outcome * 4 + acks code and the reads' 0 live / -1 final), op_id, s_p
    and s_o (the send's), n_reads, r_min and r_max (the least and greatest read position, partition * 2^40 +
    offset), t_read (the first read), phases (1 live, 2 final, OR-ed; null unread): as hub.value_summary."""
    n_s, n_r = sends.num_rows, reads.num_rows
    code = 1 + column_codes(sends["outcome"], OUTCOMES) * 4 + column_codes(sends["acks"], ACKS)
    final = column_codes(reads["phase"], ("final",)) == 0
    position = reads["partition"].to_numpy().astype(np.int64) * POS_SHIFT + reads["offset"].to_numpy()
    events = pa.table({
        "value": pa.concat_arrays([_array(sends["value"]), _array(reads["value"])]),
        "code": pa.array(np.concatenate([code, np.where(final, -1, 0)]).astype(np.int32)),
        "op_id": _then_nulls(sends["op_id"], n_r),
        "s_p": _then_nulls(sends["partition"], n_r),
        "s_o": _then_nulls(sends["offset"], n_r),
        "read": pa.array(np.concatenate([np.zeros(n_s, np.int64), np.ones(n_r, np.int64)])),
        "position": _nulls_then(position, n_s),
        "t": _nulls_then(reads["t_ns"], n_s),
        "live": _nulls_then(np.where(final, 0, LIVE).astype(np.int32), n_s),
        "final": _nulls_then(np.where(final, FINAL, 0).astype(np.int32), n_s),
    })
    g = events.group_by("value").aggregate([
        ("code", "max"), ("op_id", "max"), ("s_p", "max"), ("s_o", "max"), ("read", "sum"),
        ("position", "min"), ("position", "max"), ("t", "min"), ("live", "max"), ("final", "max")])
    phases = pc.add(pc.fill_null(g["live_max"], 0), pc.fill_null(g["final_max"], 0))     # bits of disjoint phases
    read = pc.greater(g["read_sum"], 0)
    columns = {"value": g["value"], "code": g["code_max"], "op_id": g["op_id_max"], "s_p": g["s_p_max"],
               "s_o": g["s_o_max"], "n_reads": g["read_sum"], "r_min": g["position_min"],
               "r_max": g["position_max"], "t_read": g["t_min"],
               "phases": pc.if_else(read, phases, pa.scalar(None, pa.int32()))}
    return pa.table({c: pc.cast(columns[c], ARROW[t]) for c, t in SCHEMA.items()})


def _array(column: pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)


def _then_nulls(column: pa.ChunkedArray, n: int) -> pa.Array:
    """A send column, then `n` nulls (the reads' rows)."""
    values = _array(column)
    return pa.concat_arrays([values, pa.nulls(n, values.type)])


def _nulls_then(values, n: int) -> pa.Array:
    """`n` nulls (the sends' rows), then a read column."""
    values = _array(values) if isinstance(values, pa.ChunkedArray) else pa.array(values)
    return pa.concat_arrays([pa.nulls(n, values.type), values])
