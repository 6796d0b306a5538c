"""The anomaly definitions on Spark, over one run or many at once: run the queries, assemble the instance rows.

The histories never come back to the driver. What does: per-run summaries (a few rows), the candidate values of
the per-value kinds, the send columns of those candidates and of the unsettled sends, and the (usually empty)
divergent positions and consumer gaps. Instance rows are then put together in pandas, in the shape of
checkers.instances, so they compare row for row with the pandas reference.
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers import instances
from checkers import spark_queries as q
from checkers.findings import Findings
from checkers.reference import Counts

SEND_COLUMNS = {"op_id": "long", "process": "int", "producer": "string", "acks": "string", "idempotent": "boolean",
                "value": "string", "partition": "int", "offset": "long", "outcome": "string",
                "t_invoke_ns": "long", "t_complete_ns": "long"}
READ_COLUMNS = {"consumer": "string", "seq": "long", "phase": "string", "partition": "int", "offset": "long",
                "value": "string", "t_ns": "long"}
ROWS_PER_SHUFFLE_PARTITION = 2_000_000     # ~100-200 MB of shuffled rows: hash maps that fit, few tasks
PER_VALUE_KINDS = ("lost", "failed_read", "recovered", "offset_mismatch", "nonmonotonic_send")
PER_POSITION_KINDS = ("duplicate", "phantom")     # rows at the value's first read position
SEND_FIELDS = ["producer", "process", "op_id", "acks", "idempotent", "t_invoke_ns", "t_complete_ns"]

__all__ = ["Findings", "find_anomalies_spark"]


def _load(spark: SparkSession, runs: dict[str, Path], name: str, columns: dict[str, str]) -> DataFrame:
    """One file of every run, read straight from Parquet, with `run` (the run's index) on every row.

    The schema is given rather than inferred (inference is one more Spark job per file); the files were
    validated against the same schema before, so only the columns used here are declared.
    """
    schema = ", ".join(f"`{c}` {t}" for c, t in columns.items())
    frames = []
    for index, run_dir in enumerate(runs.values()):
        df = spark.read.schema(schema).parquet(str(Path(run_dir) / "history" / name))
        frames.append(df.select(F.lit(index).alias("run"), *columns))
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def _rows(runs: dict[str, Path], name: str) -> int:
    return sum(pq.read_metadata(Path(d) / "history" / name).num_rows for d in runs.values())


def _partitions(spark: SparkSession, rows: int) -> int:
    """Shuffle partitions for an exchange of `rows` rows: enough that each task's hash map fits in memory."""
    return max(spark.sparkContext.defaultParallelism, math.ceil(rows / ROWS_PER_SHUFFLE_PARTITION))


def _to_pandas(df: DataFrame) -> pd.DataFrame:
    """Collect through Arrow keeping nullable integers exact (toPandas would turn them into float64)."""
    return df.toArrow().to_pandas(types_mapper={pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype()}.get)


def find_anomalies_spark(spark: SparkSession, runs: dict[str, Path]) -> Findings:
    """Every anomaly instance of every run in `runs` ({run_id: results dir}) in one Spark session."""
    run_ids = list(runs)
    sends = _load(spark, runs, "sends.parquet", SEND_COLUMNS)
    reads = _load(spark, runs, "reads.parquet", READ_COLUMNS)
    n_sends, n_reads = _rows(runs, "sends.parquet"), _rows(runs, "reads.parquet")

    # Independent queries run concurrently: the cores stay busy while one job plans, compiles or waits on a
    # stage with fewer tasks than cores (a window over a few series), which is most of a small run's time.
    with ThreadPoolExecutor(max_workers=3) as pool:
        send_summary = pool.submit(_to_pandas, q.sends_summary(sends))
        read_summary = pool.submit(_to_pandas, q.reads_summary(reads))
        poll_skips = pool.submit(_poll_skip_rows, spark, reads)
        at_position = q.value_positions(sends, reads, _partitions(spark, n_sends + n_reads))
        # at_position is not persisted: a cached plan loses its hash partitioning under AQE, which would cost
        # two more exchanges of every value; the divergent branch recomputes it from the reused exchange.
        found = _to_pandas(q.candidates(at_position, q.final_reach(reads), q.nonmonotonic_sends(sends)))
        per_value, divergent = found[~found["k_divergent"]], found[found["k_divergent"]]
        divergent = pool.submit(_divergent_rows, spark, reads, divergent)
        sent = per_value[per_value["op_id"].notna()]
        wanted = q.small_frame(spark, [(int(r), int(o)) for r, o in zip(sent["run"], sent["op_id"])],
                               "run int, op_id long") if len(sent) else None
        details = _to_pandas(q.send_details(sends, wanted))
        found = [_per_value_rows(per_value, details[details["wanted"]]), divergent.result(), poll_skips.result()]
        send_summary, read_summary = send_summary.result(), read_summary.result()

    found = pd.concat([f for f in found if len(f)], ignore_index=True) if any(len(f) for f in found) else \
        instances.empty().assign(run=pd.Series(dtype="int64"))
    found = found.assign(run_id=[run_ids[int(i)] for i in found["run"]]).drop(columns="run")

    unsettled = details[details["outcome"].isin(["fail", "info"])]
    unsettled = unsettled.assign(run_id=[run_ids[int(i)] for i in unsettled["run"]])[
        ["run_id", "partition", "acks", "t_invoke_ns", "t_complete_ns"]].reset_index(drop=True)
    counts, acks, idempotent = _summaries(run_ids, send_summary, read_summary)
    return Findings(instances=found, counts=counts, unsettled=unsettled, acks=acks, idempotent=idempotent)


def _per_value_rows(candidates: pd.DataFrame, details: pd.DataFrame) -> pd.DataFrame:
    """Instance rows of the kinds decided per value: send rows, and duplicate/phantom at the first position."""
    c = candidates.rename(columns={"partition": "first_p", "offset": "first_o"}) \
        .merge(details.drop(columns=["wanted", "outcome"]), on=["run", "op_id"], how="left")
    rows = []
    for kind in PER_VALUE_KINDS:
        sel = c[c[f"k_{kind}"]]
        rows.append(sel[["run", "value", "partition", "offset", *SEND_FIELDS]]
                    .assign(kind=kind, t_read_ns=sel["t_read"]))
    for kind in PER_POSITION_KINDS:
        sel = c[c[f"k_{kind}"]]
        rows.append(sel[["run", "value", *SEND_FIELDS]]
                    .assign(kind=kind, partition=sel["first_p"], offset=sel["first_o"], multiplicity=sel["n"],
                            t_read_ns=sel["t_read"]))
    return _instance_rows(rows)


def _divergent_rows(spark: SparkSession, reads: DataFrame, positions: pd.DataFrame) -> pd.DataFrame:
    """One row per position read with several values: the smallest value, how many, the first read."""
    if not len(positions):
        return pd.DataFrame()
    keys = q.small_frame(spark, [(int(r), int(p), int(o)) for r, p, o in
                                 zip(positions["run"], positions["partition"], positions["offset"])],
                         "run int, partition int, offset long")
    at = ["run", "partition", "offset"]
    values = _to_pandas(q.values_at(reads, keys)).groupby(at, as_index=False)["value"].min()
    rows = positions.drop(columns="value").merge(values, on=at)
    return _instance_rows([rows.rename(columns={"t_read": "t_read_ns", "n": "multiplicity"})
                           .assign(kind="divergent")])


def _poll_skip_rows(spark: SparkSession, reads: DataFrame) -> pd.DataFrame:
    """Gaps in a live consumer's offsets that skip a record someone read, with the read that jumped."""
    gaps = _to_pandas(q.poll_gaps(reads))
    if not len(gaps):
        return pd.DataFrame()
    gaps["gap"] = range(len(gaps))
    keyed = q.small_frame(spark, list(zip(gaps["run"].astype(int), gaps["partition"].astype(int),
                                          gaps["from_offset"].astype(int), gaps["offset"].astype(int),
                                          gaps["gap"].astype(int))),
                          "run int, partition int, from_offset long, offset long, gap long")
    skipping = set(_to_pandas(q.gaps_with_reads_between(reads, keyed))["gap"].astype(int))
    gaps = gaps[gaps["gap"].isin(skipping)]
    if not len(gaps):
        return pd.DataFrame()
    keys = q.small_frame(spark, list(zip(gaps["run"].astype(int), gaps["consumer"], gaps["seq"].astype(int))),
                         "run int, consumer string, seq long")
    landed = _to_pandas(q.reads_at(reads, keys)).rename(columns={"t_ns": "t_read_ns"})
    rows = gaps.merge(landed, on=["run", "consumer", "seq"])
    return _instance_rows([rows.assign(kind="poll_skip")])


def _instance_rows(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    return pd.concat([instances.typed(f, keep=("run",)) for f in frames], ignore_index=True)


def _summaries(run_ids: list[str], send_summary: pd.DataFrame, read_summary: pd.DataFrame):
    counts, acks, idempotent = {}, {}, {}
    for i, run_id in enumerate(run_ids):
        s = send_summary[send_summary["run"] == i]
        r = read_summary[read_summary["run"] == i]
        by_outcome = s.groupby("outcome")["count"].sum()
        counts[run_id] = Counts(sends=int(s["count"].sum()), ok=int(by_outcome.get("ok", 0)),
                                fail=int(by_outcome.get("fail", 0)), info=int(by_outcome.get("info", 0)),
                                reads=int(r["count"].sum()),
                                final_reads=int(r.loc[r["phase"] == "final", "count"].sum()))
        acks[run_id] = tuple(sorted(s["acks"].unique()))
        idempotent[run_id] = tuple(sorted(bool(x) for x in s["idempotent"].unique()))
    return counts, acks, idempotent
