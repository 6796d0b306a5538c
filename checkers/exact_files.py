"""The exact per-value columns of the values read at two positions or more, on the driver, for Spark's predicates.

hub's per-value pass decides a value from the extremes of its reads; a value read at two positions (ambiguous)
needs the three-level aggregation, (value, partition, offset) -> (value, partition) -> value
(queries.per_value_exact). A local check's driver holds those values' rows (checkers.summary_files names them), a
few thousand of them: the same aggregation is a few pandas group-bys here, where Spark's was three shuffle stages
of a cold JVM beside the per-value pass (heavy: 6,983 values, 2.1-2.4 s, ending after the pass). Spark still
applies every kind's predicate to these columns (queries.candidates_of_per_value): only the aggregation moved.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from kafka_chaos.checkers.bucket_files import column_codes
from kafka_chaos.checkers.lookup_files import ARROW
from kafka_chaos.checkers.spark.queries import ACKS, OUTCOMES

NAME = "ambiguous.parquet"
SCHEMA = {"value": "string", "code": "int", "op_id": "long", "s_p": "int", "s_o": "long", "s_fin": "int",
          "at_acked": "boolean", "n_pos": "long", "first_p": "int", "first_o": "long", "lar_p": "int",
          "lar_o": "long", "t_read": "long"}       # queries.per_value_exact's columns and Spark types, `run` added
INT = "Int64"


def per_value_exact(sends: pa.Table, reads: pa.Table) -> pa.Table:
    """queries.per_value_exact's rows of the values whose every send and read are `sends` (value, partition, offset,
    outcome, acks, op_id) and `reads` (value, partition, offset, phase, t_ns)."""
    code = 1 + column_codes(sends["outcome"], OUTCOMES) * 4 + column_codes(sends["acks"], ACKS)
    final = column_codes(reads["phase"], ("final",)) == 0
    events = pd.DataFrame({
        "value": np.concatenate([sends["value"].to_numpy(zero_copy_only=False),
                                 reads["value"].to_numpy(zero_copy_only=False)]).astype(object),
        "p": _ints(sends["partition"], reads["partition"]), "o": _ints(sends["offset"], reads["offset"]),
        "code": pd.array(np.concatenate([code, np.where(final, -1, 0)]), INT),
        "x": _ints(sends["op_id"], reads["t_ns"])})
    read = events["code"] <= 0
    at = events.assign(n_reads=read.astype("int64"), t_first=events["x"].where(read),
                       op_id=events["x"].where(~read), live=(events["code"] == 0).astype("int64"),
                       fin=(events["code"] == -1).astype("int64")) \
        .groupby(["value", "p", "o"], dropna=False, sort=False) \
        .agg(code=("code", "max"), n_reads=("n_reads", "sum"), t_first=("t_first", "min"), op_id=("op_id", "max"),
             live=("live", "max"), fin=("fin", "max")).reset_index()
    read_here, send_here = at["n_reads"] > 0, at["code"] > 0
    part = at.assign(s_o=at["o"].where(send_here), at_acked=send_here & read_here, n_pos=read_here.astype("int64"),
                     first_o=at["o"].where(read_here), live_o=at["o"].where(at["live"] == 1)) \
        .groupby(["value", "p"], dropna=False, sort=False) \
        .agg(code=("code", "max"), op_id=("op_id", "max"), s_o=("s_o", "max"), at_acked=("at_acked", "max"),
             n_pos=("n_pos", "sum"), first_o=("first_o", "min"), t_read=("t_first", "min"), fin_p=("fin", "max"),
             live_p=("live", "max"), live_o=("live_o", "min")).reset_index()
    sent, read_here = part["code"] > 0, part["n_pos"] > 0
    after_read = (part["live_p"] == 1) & (part["fin_p"] == 0)
    part = part.assign(s_p=part["p"].where(sent), s_fin=part["fin_p"].where(sent), first_p=part["p"].where(read_here),
                       lar_p=part["p"].where(after_read))
    by_value = part.groupby("value", sort=False)
    out = by_value.agg(code=("code", "max"), op_id=("op_id", "max"), s_p=("s_p", "max"), s_o=("s_o", "max"),
                       s_fin=("s_fin", "max"), at_acked=("at_acked", "max"), n_pos=("n_pos", "sum"),
                       first_p=("first_p", "min"), lar_p=("lar_p", "min"), t_read=("t_read", "min"))
    out["first_o"] = _min_by(part, "first_o", "first_p")
    out["lar_o"] = _min_by(part, "live_o", "lar_p")
    out = out.reset_index()
    return pa.table({c: pa.array(out[c], ARROW[t], from_pandas=True) for c, t in SCHEMA.items()})


def _ints(sends: pa.ChunkedArray, reads: pa.ChunkedArray) -> pd.arrays.IntegerArray:
    """A send column, then a read column, as one nullable integer array."""
    return pd.array(pa.chunked_array([*sends.cast(pa.int64()).chunks, *reads.cast(pa.int64()).chunks],
                                     pa.int64()).to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get), INT)


def _min_by(part: pd.DataFrame, column: str, order: str) -> pd.Series:
    """Per value, `column` of the row with the least `order` (Spark's min_by: rows whose `order` is null skipped),
    indexed by value."""
    ranked = part[part[order].notna()]
    if not len(ranked):
        return pd.Series(pd.NA, index=part["value"].unique(), dtype=INT)
    first = ranked.loc[ranked.groupby("value", sort=False)[order].idxmin()]
    return pd.Series(first[column].to_numpy(), index=first["value"].to_numpy()).astype(INT)
