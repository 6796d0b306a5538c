"""The anomaly definitions as Spark queries, over one run or many at once (every row carries its run_id).

All instance kinds are one union plan collected once, so Spark reuses the shared exchanges (the positions table,
the sends-to-reads join) instead of recomputing them per kind. Only instances, per-run counts and the sends that
did not succeed come back to the driver; the histories themselves never do.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from checkers import instances
from checkers.reference import Counts

SEND_COLUMNS = {"op_id": "long", "process": "int", "producer": "string", "acks": "string", "idempotent": "boolean",
                "value": "string", "partition": "int", "offset": "long", "outcome": "string",
                "t_invoke_ns": "long", "t_complete_ns": "long"}
READ_COLUMNS = {"consumer": "string", "seq": "long", "phase": "string", "partition": "int", "offset": "long",
                "value": "string", "t_ns": "long"}
SPARK_TYPES = {"string": "string", "Int32": "int", "Int64": "long", "boolean": "boolean"}


@dataclass
class Findings:
    """What the anomaly pass returns for a set of runs, keyed by run_id."""

    instances: pd.DataFrame        # instance columns + run_id
    counts: dict[str, Counts]
    unsettled: pd.DataFrame        # sends with outcome fail or info: run_id, partition, acks, t_invoke_ns, t_complete_ns
    acks: dict[str, tuple] = field(default_factory=dict)          # acks values in use per run
    idempotent: dict[str, tuple] = field(default_factory=dict)    # idempotence flags in use per run

    def for_run(self, run_id: str) -> tuple[pd.DataFrame, Counts, pd.DataFrame]:
        inst = self.instances[self.instances["run_id"] == run_id].drop(columns="run_id")
        uns = self.unsettled[self.unsettled["run_id"] == run_id].drop(columns="run_id")
        zero = Counts(0, 0, 0, 0, 0, 0)
        return instances.normalise(inst), self.counts.get(run_id, zero), uns.reset_index(drop=True)


def _load(spark: SparkSession, runs: dict[str, Path], name: str, columns: dict[str, str]) -> DataFrame:
    frames = []
    for run_id, run_dir in runs.items():
        df = spark.read.parquet(str(Path(run_dir) / "history" / name))
        frames.append(df.select(F.lit(run_id).alias("run_id"),
                                *[F.col(c).cast(t).alias(c) for c, t in columns.items()]))
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def _to_pandas(df: DataFrame) -> pd.DataFrame:
    """Collect through Arrow keeping nullable integers exact (toPandas would turn them into float64)."""
    import pyarrow as pa
    return df.toArrow().to_pandas(types_mapper={pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype()}.get)


def _instance_frame(df: DataFrame, kind: str) -> DataFrame:
    """Project onto the instance columns (nulls for those a kind does not have)."""
    cols = [F.col("run_id"), F.lit(kind).alias("kind")]
    for name, dtype in instances.INSTANCE_COLUMNS.items():
        if name == "kind":
            continue
        src = F.col(name) if name in df.columns else F.lit(None)
        cols.append(src.cast(SPARK_TYPES[dtype]).alias(name))
    return df.select(*cols)


def find_anomalies_spark(spark: SparkSession, runs: dict[str, Path]) -> Findings:
    """Every anomaly instance of every run in `runs` ({run_id: results dir}) in one Spark job."""
    sends = _load(spark, runs, "sends.parquet", SEND_COLUMNS)
    reads = _load(spark, runs, "reads.parquet", READ_COLUMNS)
    send_cols = ["partition", "offset", "producer", "process", "op_id", "acks", "idempotent",
                 "t_invoke_ns", "t_complete_ns"]

    # Distinct positions with their first read: (run, partition, offset, value) -> t_first.
    positions = reads.groupBy("run_id", "partition", "offset", "value").agg(F.min("t_ns").alias("t_first"))
    p = positions.select("run_id", "value", F.col("partition").alias("r_partition"),
                         F.col("offset").alias("r_offset"), "t_first")

    # One row per value, sent or read: the send (if any) and what the reads say about it.
    joined = sends.withColumn("sent", F.lit(True)).join(p, ["run_id", "value"], "full_outer")
    at_acked = (F.col("r_partition") == F.col("partition")) & (F.col("r_offset") == F.col("offset"))
    per_value = joined.groupBy("run_id", "value").agg(
        *[F.first(c, ignorenulls=True).alias(c) for c in send_cols + ["outcome"]],
        F.max(F.coalesce(F.col("sent"), F.lit(False))).alias("sent"),
        F.count("r_offset").alias("n_pos"),
        F.max(F.coalesce(at_acked, F.lit(False))).alias("at_acked"),
        F.min("t_first").alias("t_read_ns"),
        F.min(F.struct("r_partition", "r_offset")).alias("first_pos"),
    )
    final_reach = (reads.where(F.col("phase") == "final").groupBy("run_id", "partition")
                   .agg(F.max("offset").alias("final_max")))
    read = F.col("n_pos") > 0
    ok = F.col("outcome") == "ok"
    with_offset = ok & F.col("offset").isNotNull()

    lost = (per_value.where(ok & F.col("acks").isin("1", "all") & ~read & F.col("partition").isNotNull())
            .join(F.broadcast(final_reach), ["run_id", "partition"], "inner")
            .where(F.col("offset").isNull() | (F.col("final_max") >= F.col("offset"))))
    at_first_pos = per_value.withColumn("partition", F.col("first_pos.r_partition")) \
        .withColumn("offset", F.col("first_pos.r_offset"))
    duplicate = at_first_pos.where(F.col("n_pos") >= 2).withColumn("multiplicity", F.col("n_pos"))
    phantom = at_first_pos.where(read & ~F.col("sent")).withColumn("multiplicity", F.col("n_pos"))
    failed_read = per_value.where((F.col("outcome") == "fail") & read)
    recovered = per_value.where((F.col("outcome") == "info") & read)
    offset_mismatch = per_value.where(with_offset & read & ~F.col("at_acked"))

    divergent = (positions.groupBy("run_id", "partition", "offset")
                 .agg(F.count("*").alias("multiplicity"), F.min("value").alias("value"),
                      F.min("t_first").alias("t_read_ns"))
                 .where(F.col("multiplicity") >= 2))

    series = Window.partitionBy("run_id", "process", "producer", "partition").orderBy("t_invoke_ns", "op_id")
    nonmonotonic = (per_value.where(with_offset).withColumn("prev", F.lag("offset").over(series))
                    .where(F.col("offset") < F.col("prev")))

    steps = Window.partitionBy("run_id", "consumer", "partition").orderBy("seq")
    gaps = (reads.where(F.col("phase") == "live")
            .withColumn("from_offset", F.lag("offset").over(steps))
            .where(F.col("offset") > F.col("from_offset") + 1)
            .withColumn("step", F.monotonically_increasing_id())
            .withColumnRenamed("t_ns", "t_read_ns"))
    read_offsets = positions.select("run_id", "partition", F.col("offset").alias("between")).distinct()
    skipped = (read_offsets.join(F.broadcast(gaps.select("run_id", "partition", "from_offset", "offset", "step")),
                                 ["run_id", "partition"])
               .where((F.col("between") > F.col("from_offset")) & (F.col("between") < F.col("offset")))
               .select("step").distinct())
    poll_skip = gaps.join(skipped, "step", "left_semi")

    union = None
    for kind, df in (("lost", lost), ("duplicate", duplicate), ("phantom", phantom), ("divergent", divergent),
                     ("failed_read", failed_read), ("offset_mismatch", offset_mismatch),
                     ("nonmonotonic_send", nonmonotonic), ("poll_skip", poll_skip), ("recovered", recovered)):
        frame = _instance_frame(df, kind)
        union = frame if union is None else union.unionByName(frame)
    found = _to_pandas(union)

    counts_rows = (sends.groupBy("run_id").agg(
        F.count("*").alias("sends"), F.sum((F.col("outcome") == "ok").cast("long")).alias("ok"),
        F.sum((F.col("outcome") == "fail").cast("long")).alias("fail"),
        F.sum((F.col("outcome") == "info").cast("long")).alias("info"),
        F.collect_set("acks").alias("acks_used"), F.collect_set("idempotent").alias("idempotent_used"))
        .join(reads.groupBy("run_id").agg(F.count("*").alias("reads"),
                                          F.sum((F.col("phase") == "final").cast("long")).alias("final_reads")),
              "run_id", "full_outer")).collect()
    counts = {r["run_id"]: Counts(*(int(r[c] or 0) for c in ("sends", "ok", "fail", "info", "reads",
                                                            "final_reads"))) for r in counts_rows}
    acks = {r["run_id"]: tuple(sorted(r["acks_used"] or ())) for r in counts_rows}
    idempotent = {r["run_id"]: tuple(sorted(r["idempotent_used"] or ())) for r in counts_rows}
    unsettled = (sends.where(F.col("outcome").isin("fail", "info"))
                 .select("run_id", "partition", "acks", "t_invoke_ns", "t_complete_ns"))
    unsettled = _to_pandas(unsettled)
    found = found.astype({c: instances.INSTANCE_COLUMNS[c] for c in found.columns if c != "run_id"})
    return Findings(instances=found, counts=counts, unsettled=unsettled, acks=acks, idempotent=idempotent)
