"""Getting histories into Spark and small answers out: the loaders and collectors every Spark-side module shares."""
from __future__ import annotations

import contextlib
import math
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import SparkContext
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_chaos.checkers import instances

SEND_COLUMNS = {"op_id": "long", "process": "int", "producer": "string", "acks": "string", "idempotent": "boolean",
                "value": "string", "partition": "int", "offset": "long", "outcome": "string",
                "t_invoke_ns": "long", "t_complete_ns": "long"}
READ_COLUMNS = {"consumer": "string", "seq": "long", "phase": "string", "partition": "int", "offset": "long",
                "value": "string", "t_ns": "long"}
ROWS_PER_SHUFFLE_PARTITION = 2_000_000     # ~100-200 MB of shuffled rows: hash maps that fit, few tasks
CRITICAL = "critical"                      # the scheduler pool of the check's longest chain (spark_pools.xml)


def load(spark: SparkSession, runs: dict[str, Path | str], name: str, columns: dict[str, str]) -> DataFrame:
    """One file of every run, read straight from Parquet, with `run` (the run's index) on every row. A run is a
    local results directory, or the URL of one Spark reads itself (s3a://bucket/prefix/run_id: checkers.s3a).

    The schema is given rather than inferred (inference is one more Spark job per file); the files were
    validated against the same schema before, so only the columns used here are declared.
    """
    schema = ", ".join(f"`{c}` {t}" for c, t in columns.items())
    frames = []
    for index, run_dir in enumerate(runs.values()):
        df = spark.read.schema(schema).parquet(history_file(run_dir, name))
        frames.append(df.select(F.lit(index).alias("run"), *columns))
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def history_file(run_dir: Path | str, name: str) -> str:
    """history/<name> of a run directory or of a run's URL (a Path would fold the URL's '//')."""
    text = str(run_dir)
    return f"{text.rstrip('/')}/history/{name}" if "://" in text else str(Path(run_dir) / "history" / name)


def row_count(runs: dict[str, Path], name: str) -> int:
    return sum(pq.read_metadata(Path(d) / "history" / name).num_rows for d in runs.values())


def shuffle_partitions(spark: SparkSession, rows: int, rows_per_partition: int = ROWS_PER_SHUFFLE_PARTITION) -> int:
    """Shuffle partitions for an exchange of `rows` rows: enough that each task's hash map fits in memory."""
    return max(spark.sparkContext.defaultParallelism, math.ceil(rows / rows_per_partition))


@contextlib.contextmanager
def sql_conf(spark: SparkSession, settings: dict[str, str]):
    """Runtime SQL settings of `spark` for the block, then back to what they were: a warm session checks run after
    run, and each pass picks its own."""
    before = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        stopped = SparkContext._active_spark_context is None     # the block ended the session: nothing to restore
        for k, v in ({} if stopped else before).items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def to_pandas(df: DataFrame, label: str | None = None, pool: str | None = None) -> pd.DataFrame:
    """Collect through Arrow keeping nullable integers exact (toPandas would turn them into float64).

    label: the job's description (Spark's UI and event log name its jobs by it; bench/spark_profile.py sums
    executor time per label). pool: the fair scheduler pool (CRITICAL for the longest chain, else "default"). The
    properties are the calling thread's own, so they are set on every call.
    """
    sc = df.sparkSession.sparkContext
    if label:
        sc.setLocalProperty("spark.job.description", label)
    sc.setLocalProperty("spark.scheduler.pool", pool or "default")
    return df.toArrow().to_pandas(types_mapper={pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype()}.get)


def instance_rows(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Instance rows in the canonical shape of checkers.instances, keeping the run index."""
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    return pd.concat([instances.typed(f, keep=("run",)) for f in frames], ignore_index=True)
