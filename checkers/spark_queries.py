"""The Spark queries behind the anomaly definitions, shaped for a 2-core machine and 10M-100M sends.

Why they look the way they do:
- Every aggregation buffer is numeric or boolean. A string or struct in a buffer (min(value), first(producer),
  min(struct(partition, offset))) makes Spark fall back from hash to sort aggregation over the whole history.
- Sends and reads meet in one exchange keyed by (run, value). The three aggregation levels above it
  ((value, partition, offset) -> (value, partition) -> value) need no further exchange, because a hash
  partitioning on (run, value) satisfies all three.
- Through that exchange a send carries only its op_id, its acked position and a small outcome/acks code; the
  other send columns are fetched afterwards for the few candidate op_ids (`send_details`).
- Window functions only where order matters (nonmonotonic_send, poll_skip), over narrow rows.
- Queries whose answer is usually empty (which values sit at a divergent position, which gaps have a read
  between their ends) run only when the cheap query before them found something.

Every frame carries `run`, an integer index of the run, so many runs are checked in one job.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

OUTCOMES = ("ok", "fail", "info")          # outcome code: the index; anything else: len(OUTCOMES)
ACKS = ("0", "1", "all")                   # acks code: the index; anything else: len(ACKS)
OK, FAIL, INFO = 0, 1, 2
ACKED = (1, 2)                             # acks codes of "1" and "all"
CANDIDATE_KINDS = ("lost", "duplicate", "phantom", "failed_read", "recovered", "offset_mismatch",
                   "nonmonotonic_send", "divergent")


def _index_of(col, names: tuple[str, ...]):
    expr = F.lit(len(names))
    for i in reversed(range(len(names))):
        expr = F.when(col == names[i], F.lit(i)).otherwise(expr)
    return expr


def sends_summary(sends: DataFrame) -> DataFrame:
    """Per run: how many sends of each outcome, acks and idempotence (counts, and the model's inputs)."""
    return sends.groupBy("run", "outcome", "acks", "idempotent").count()


def reads_summary(reads: DataFrame) -> DataFrame:
    """Per run and phase: how many reads (the counts of verdict.json)."""
    return reads.groupBy("run", "phase").count()


def final_reach(reads: DataFrame) -> DataFrame:
    """(run, s_p, reach): the highest offset the final drain read in each partition."""
    return reads.where(F.col("phase") == "final").groupBy("run", F.col("partition").alias("s_p")) \
        .agg(F.max("offset").alias("reach"))


def nonmonotonic_sends(sends: DataFrame) -> DataFrame:
    """(run, op_id) of ok sends acked at a lower offset than the previous send of their series."""
    ok = sends.where((F.col("outcome") == "ok") & (F.col("offset") >= 0)) \
        .select("run", "process", "producer", "partition", "t_invoke_ns", "op_id", "offset")
    series = Window.partitionBy("run", "process", "producer", "partition").orderBy("t_invoke_ns", "op_id")
    return ok.withColumn("prev", F.lag("offset").over(series)).where(F.col("offset") < F.col("prev")) \
        .select("run", "op_id")


def value_positions(sends: DataFrame, reads: DataFrame, partitions: int) -> DataFrame:
    """One row per (run, value, partition, offset) sent or read: the hub every per-value and per-position kind
    is computed from.

    A send lands in the same group as the reads at its acked position. Columns: code (0: reads only, else the
    send's 1 + outcome * 4 + acks code), n_reads, t_first (first read), op_id (of the send). Hash-partitioned by
    (run, value).
    """
    code = 1 + _index_of(F.col("outcome"), OUTCOMES) * 4 + _index_of(F.col("acks"), ACKS)
    send_rows = sends.select("run", "value", F.col("partition").alias("p"), F.col("offset").alias("o"),
                             code.alias("code"), F.col("op_id").alias("x"))
    read_rows = reads.select("run", "value", F.col("partition").alias("p"), F.col("offset").alias("o"),
                             F.lit(0).alias("code"), F.col("t_ns").alias("x"))
    events = send_rows.unionByName(read_rows).repartition(partitions, "run", "value")
    is_read = F.col("code") == 0
    return events.groupBy("run", "value", "p", "o").agg(
        F.max("code").alias("code"),
        F.sum(is_read.cast("long")).alias("n_reads"),
        F.min(F.when(is_read, F.col("x"))).alias("t_first"),
        F.max(F.when(~is_read, F.col("x"))).alias("op_id"))


def candidates(at_position: DataFrame, reach: DataFrame, nonmonotonic: DataFrame) -> DataFrame:
    """Rows that are instances (or, for divergent, instance positions), one boolean column `k_<kind>` per kind.

    Per value (lost, duplicate, phantom, failed_read, recovered, offset_mismatch, nonmonotonic_send): run, value,
    op_id, n (positions read), partition and offset (the first position read), t_read (first read).
    Per position (divergent): run, n (distinct values read there), partition, offset, t_read; value and op_id
    null (the smallest value is looked up afterwards, for these few positions only).
    at_position: `value_positions`; reach: (run, s_p, reach) the final drain's highest offset per partition;
    nonmonotonic: (run, op_id).
    """
    per_value = _per_value(at_position, reach, nonmonotonic)
    # Each read group is one distinct value at its position, so counting groups per position counts values.
    divergent = (at_position.where(F.col("n_reads") > 0).groupBy("run", "p", "o")
                 .agg(F.count(F.lit(1)).alias("n"), F.min("t_first").alias("t_read"))
                 .where(F.col("n") >= 2)
                 .select("run", F.lit(None).cast("string").alias("value"), F.lit(None).cast("long").alias("op_id"),
                         "n", F.col("p").alias("partition"), F.col("o").alias("offset"), "t_read",
                         *[F.lit(kind == "divergent").alias(f"k_{kind}") for kind in CANDIDATE_KINDS]))
    return per_value.unionByName(divergent)


def _per_value(at_position: DataFrame, reach: DataFrame, nonmonotonic: DataFrame) -> DataFrame:
    """From (value, partition, offset) groups to one row per value, then the per-value kinds' conditions."""
    read_here, send_here = F.col("n_reads") > 0, F.col("code") > 0
    at_partition = at_position.groupBy("run", "value", "p").agg(
        F.max("code").alias("code"), F.max("op_id").alias("op_id"),
        F.max(F.when(send_here, F.col("o"))).alias("s_o"),
        F.max(send_here & read_here).alias("at_acked"),
        F.sum(read_here.cast("long")).alias("n_pos"),
        F.min(F.when(read_here, F.col("o"))).alias("first_o"),
        F.min("t_first").alias("t_read"))
    read_here = F.col("n_pos") > 0
    # min_by over the partition gives the first position exactly: first_o is already the least offset within it.
    per_value = at_partition.groupBy("run", "value").agg(
        F.max("code").alias("code"), F.max("op_id").alias("op_id"),
        F.max(F.when(F.col("code") > 0, F.col("p"))).alias("s_p"), F.max("s_o").alias("s_o"),
        F.max("at_acked").alias("at_acked"), F.sum("n_pos").alias("n_pos"),
        F.min(F.when(read_here, F.col("p"))).alias("first_p"),
        F.min_by("first_o", F.when(read_here, F.col("p"))).alias("first_o"),
        F.min("t_read").alias("t_read"))

    flagged = (per_value
               .join(F.broadcast(reach), ["run", "s_p"], "left")
               .join(F.broadcast(nonmonotonic.withColumn("k_nonmonotonic_send", F.lit(True))),
                     ["run", "op_id"], "left"))
    sent, read = F.col("code") > 0, F.col("n_pos") > 0
    outcome = F.when(sent, F.floor((F.col("code") - 1) / 4))
    acks = F.when(sent, (F.col("code") - 1) % 4)
    ok = sent & (outcome == OK)
    drained = F.when(F.col("s_o") >= 0, F.col("reach") >= F.col("s_o")).otherwise(F.col("reach").isNotNull())
    kinds = {
        "lost": ok & acks.isin(*ACKED) & ~read & (F.col("s_p") >= 0) & drained,
        "duplicate": F.col("n_pos") >= 2,
        "phantom": read & ~sent,
        "failed_read": sent & (outcome == FAIL) & read,
        "recovered": sent & (outcome == INFO) & read,
        "offset_mismatch": ok & (F.col("s_o") >= 0) & read & ~F.coalesce(F.col("at_acked"), F.lit(False)),
        "nonmonotonic_send": F.col("k_nonmonotonic_send"),
        "divergent": F.lit(False),
    }
    flags = [F.coalesce(kinds[kind], F.lit(False)).alias(f"k_{kind}") for kind in CANDIDATE_KINDS]
    out = flagged.select("run", "value", "op_id", F.col("n_pos").alias("n"), F.col("first_p").alias("partition"),
                         F.col("first_o").alias("offset"), "t_read", *flags)
    return out.where(" OR ".join(f"k_{kind}" for kind in CANDIDATE_KINDS))


def send_details(sends: DataFrame, wanted: DataFrame | None) -> DataFrame:
    """The send columns of the wanted (run, op_id)s, plus every send that failed or timed out (unsettled)."""
    cols = sends.select("run", "op_id", "producer", "process", "acks", "idempotent", "t_invoke_ns",
                        "t_complete_ns", "partition", "offset", "outcome")
    unsettled = F.col("outcome").isin("fail", "info")
    if wanted is None:
        return cols.where(unsettled).withColumn("wanted", F.lit(False))
    marked = cols.join(F.broadcast(wanted.withColumn("wanted", F.lit(True))), ["run", "op_id"], "left")
    return marked.where(F.col("wanted").isNotNull() | unsettled) \
        .withColumn("wanted", F.coalesce(F.col("wanted"), F.lit(False)))


def values_at(reads: DataFrame, positions: DataFrame) -> DataFrame:
    """The values read at the given (run, partition, offset) positions."""
    return reads.select("run", "partition", "offset", "value") \
        .join(F.broadcast(positions), ["run", "partition", "offset"], "left_semi")


def poll_gaps(reads: DataFrame) -> DataFrame:
    """Steps a -> b > a + 1 of a live consumer through a partition: (run, consumer, partition, seq of b, a, b)."""
    live = reads.where(F.col("phase") == "live").select("run", "consumer", "partition", "seq", "offset")
    steps = Window.partitionBy("run", "consumer", "partition").orderBy("seq")
    return live.withColumn("from_offset", F.lag("offset").over(steps)) \
        .where(F.col("offset") > F.col("from_offset") + 1)


def gaps_with_reads_between(reads: DataFrame, gaps: DataFrame) -> DataFrame:
    """The `gap` ids (of gaps: run, partition, from_offset, offset, gap) with some read strictly inside."""
    g = gaps.select("run", "partition", F.col("from_offset").alias("a"), F.col("offset").alias("b"), "gap")
    r = reads.select("run", "partition", "offset")
    inside = (r["run"] == g["run"]) & (r["partition"] == g["partition"]) & (r["offset"] > g["a"]) & \
        (r["offset"] < g["b"])
    return r.join(F.broadcast(g), inside).select("gap").distinct()


def reads_at(reads: DataFrame, keys: DataFrame) -> DataFrame:
    """value and t_ns of the reads with the given (run, consumer, seq)."""
    return reads.select("run", "consumer", "seq", "value", "t_ns") \
        .join(F.broadcast(keys), ["run", "consumer", "seq"], "left_semi")


def small_frame(spark: SparkSession, rows: list[tuple], schema: str) -> DataFrame:
    """A driver-side table (a handful of keys) as a DataFrame to broadcast."""
    return spark.createDataFrame(rows, schema)
