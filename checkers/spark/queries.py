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

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from kafka_chaos.history.kinds import PER_VALUE_COLUMNS, PREDICATES
from kafka_chaos.history.schema import ACKED, ACKS_LEVELS

OUTCOMES = ("ok", "fail", "info")          # outcome code: the index; anything else: len(OUTCOMES)
ACKS = ACKS_LEVELS                         # acks code: the index; anything else: len(ACKS)
OK, FAIL, INFO = 0, 1, 2
ACKED_CODES = tuple(ACKS.index(a) for a in ACKED)   # acks codes of "1" and "all"
ARROW_TYPES = {"int": pa.int32(), "long": pa.int64(), "string": pa.string()}   # small_frame's column types
ISLAND_TASKS = 8                           # islands: tasks of the window over the spans (see islands)
CANDIDATE_KINDS = (*PREDICATES, "nonmonotonic_send")   # the per-value kinds, and the one a window finds


def _index_of(col, names: tuple[str, ...]):
    expr = F.lit(len(names))
    for i in reversed(range(len(names))):
        expr = F.when(col == names[i], F.lit(i)).otherwise(expr)
    return expr


def sends_summary(sends: DataFrame) -> DataFrame:
    """Per run: how many sends of each outcome, acks and idempotence (counts, and the model's inputs), as (run, code,
    count) of `summary_code` (`summary_of_codes` reads it back): a hash map of strings cost this scan of 10M sends
    2-3x the CPU."""
    return sends.groupBy("run", summary_code().alias("code")).count()


SUMMARY_STRIDE = 3                          # idempotent: 0 false, 1 true, 2 null


def summary_code():
    """A send's (outcome, acks, idempotent) as one small integer, the codes of OUTCOMES and ACKS (`_index_of`)
    combined: what `sends_summary` groups by, and buckets.bucket_sums beside its own work."""
    idempotent = F.coalesce(F.col("idempotent").cast("int"), F.lit(2))
    return (_index_of(F.col("outcome"), OUTCOMES) * (len(ACKS) + 1) + _index_of(F.col("acks"), ACKS)) * \
        SUMMARY_STRIDE + idempotent


def summary_of_codes(codes: pd.DataFrame) -> pd.DataFrame:
    """(run, code, count) of `summary_code` -> `sends_summary`'s (run, outcome, acks, idempotent, count), outcome
    and acks as the codes of OUTCOMES and ACKS (len(...) for a name outside them), idempotent a boolean or None."""
    code = codes["code"].astype("int64").to_numpy()
    names = code // SUMMARY_STRIDE
    flags = {0: False, 1: True, 2: None}
    return pd.DataFrame({"run": codes["run"].astype("int64").to_numpy(), "outcome": names // (len(ACKS) + 1),
                         "acks": names % (len(ACKS) + 1),
                         "idempotent": [flags[int(i)] for i in code % SUMMARY_STRIDE],
                         "count": codes["count"].astype("int64").to_numpy()})


def sends_summary_by_name(sends: DataFrame) -> DataFrame:
    """`sends_summary` decoded, with outcome and acks as the strings themselves."""
    return sends.groupBy("run", "outcome", "acks", "idempotent").count()


def reads_summary(reads: DataFrame) -> DataFrame:
    """Per run, phase and partition: how many reads (the counts of verdict.json, and which partitions the final
    drain touched). Histories small enough for buckets take them from its bucket sums instead."""
    return reads.groupBy("run", "phase", "partition").count()


def one_task(df: DataFrame, gather: bool) -> DataFrame:
    """`df` in a single task when `gather`: a window or aggregation over it then needs no exchange (a single
    partition satisfies any clustering), which on 2 cores costs more CPU than it saves in parallelism. The check
    gathers its windows and, for histories too large for bucket sums, the sends summary (anomalies); a local
    check's availability buckets are computed in numpy instead (checkers.availability_files).

    Warm, one session, the 10M file (bench/query_bench.py, rounds 2-3): nonmonotonic sends 7.1-8.1 -> 5.7-6.0 JVM
    CPU-s, poll gaps 6.1-6.4 -> 4.7, availability buckets 6.7-9.5 -> 5.8-6.7; each query's wall time is longer,
    but the check runs them side by side, so what counts is the CPU. For local checks of histories up to
    `checkers.spark.anomalies.ONE_TASK_ROWS` only: a cluster's executors, and one task's sort beyond that, want the
    exchange."""
    return df.coalesce(1) if gather else df


def availability_buckets(sends: DataFrame, bucket_ns: int, never: int) -> DataFrame:
    """(run, partition, pending, first, last) in one scan of the sends: for pending = 0, the ack times of acks=1/all ok
    sends per bucket of completion time; for pending = 1, the first invoke and last completion (`never` if one
    never completed) of the acks=1/all sends invoked in each bucket. Each merged into islands (checkers.availability):
    acks no more than a bucket apart, pending spans that overlap or lie a bucket apart.

    Each send stands in both tables, so it is read once and aggregated twice (a two-row explode) rather than
    scanned and shuffled by two queries."""
    acked_ok = (F.col("outcome") == "ok") & F.col("t_complete_ns").isNotNull()     # an ack has a time
    acked = sends.where(F.col("acks").isin(*ACKED) & F.col("partition").isNotNull()) \
        .select("run", "partition", "t_invoke_ns", "t_complete_ns", acked_ok.alias("ok"),
                F.explode(F.array(F.lit(0), F.lit(1))).alias("pending"))
    rows = acked.where((F.col("pending") == 1) | F.col("ok"))
    is_pending = F.col("pending") == 1
    first = F.when(is_pending, F.col("t_invoke_ns")).otherwise(F.col("t_complete_ns"))
    last = F.when(is_pending, F.coalesce(F.col("t_complete_ns"), F.lit(never))).otherwise(F.col("t_complete_ns"))
    buckets = rows.groupBy("run", "partition", "pending", F.expr(f"(CASE WHEN pending = 1 THEN t_invoke_ns ELSE "
                                                                 f"t_complete_ns END) div {bucket_ns}").alias("b")) \
        .agg(F.min(first).alias("first"), F.max(last).alias("last")).drop("b")
    return islands(buckets, bucket_ns, keys=("run", "partition", "pending"))


def islands(spans: DataFrame, gap_ns: int, keys: tuple[str, ...] = ("run", "partition")) -> DataFrame:
    """(*keys, first, last) spans merged where one starts within gap_ns of the furthest end before it:
    the availability finder needs where acks or pending sends stop, not every bucket (a 10M-send run has a
    million), so only the islands cross to Python. Same as checkers.availability.islands."""
    # A fixed number of partitions, which adaptive execution leaves alone: coalesced by size, the few MB of spans
    # became one task that ran alone at the end of the 10M check for ~5 s while the other core idled. Keyed
    # without `run`: in a one-run check it is a constant, which the window's keys drop, so a repartition on it
    # did not satisfy the window and a third exchange (coalesced into one task again) was planned.
    spans = spans.repartition(ISLAND_TASKS, *[k for k in keys if k != "run"])
    w = Window.partitionBy(*keys).orderBy("first", "last")
    before = F.max("last").over(w.rowsBetween(Window.unboundedPreceding, -1))
    new = F.when(before.isNull() | (F.col("first") - gap_ns > before), 1).otherwise(0)   # no overflow at NEVER
    marked = spans.withColumn("island", F.sum(new).over(w.rowsBetween(Window.unboundedPreceding, 0)))
    return marked.groupBy(*keys, "island").agg(F.min("first").alias("first"), F.max("last").alias("last")) \
        .drop("island")


def breaching_sends(sends: DataFrame, windows: DataFrame) -> DataFrame:
    """(run, op_id) of acks=all ok sends whose whole invoke-to-ack interval lies inside one of `windows` (run,
    partition, start, end): the model is certain the partition's ISR was below min.insync.replicas then."""
    s = sends.where((F.col("outcome") == "ok") & (F.col("acks") == "all")) \
        .select("run", "partition", "op_id", "t_invoke_ns", "t_complete_ns")
    w = windows.select(F.col("run").alias("w_run"), F.col("partition").alias("w_p"), "start", "end")
    inside = (s["run"] == w["w_run"]) & (s["partition"] == w["w_p"]) & (s["t_invoke_ns"] >= w["start"]) & \
        (s["t_complete_ns"] <= w["end"])
    return s.join(F.broadcast(w), inside).select("run", "op_id").distinct()


def nonmonotonic_sends(sends: DataFrame, gather: bool = False) -> DataFrame:
    """(run, op_id, partition, offset) of ok sends acked at a lower offset than the previous send of their series."""
    # A window sorts by its partition keys first, and only the first sort key has a fast prefix: one 64-bit hash
    # of the series (a few dozen per run; two colliding, p ~ 2^-50, would be read as one) sorts several times
    # faster than (run, process, producer, partition). Partition and offset ride as one long (`pos`; within a
    # series the partition is fixed, so it orders as the offset): every field of a sorted row costs 8 bytes.
    ok = sends.where((F.col("outcome") == "ok") & (F.col("offset") >= 0)) \
        .select("run", F.xxhash64("run", "process", "producer", "partition").alias("series"), "t_invoke_ns",
                "op_id", pos(F.coalesce("partition", F.lit(-1)), F.col("offset")).alias("pos"))   # -1: none given
    ok = one_task(ok, gather)
    series = Window.partitionBy("series").orderBy("t_invoke_ns", "op_id")
    return ok.withColumn("prev", F.lag("pos").over(series)).where(F.col("pos") < F.col("prev")) \
        .select("run", "op_id", *_unpos("pos"))


POS_BITS = 40
POS_SHIFT = 1 << POS_BITS    # offsets below 2^40 (a trillion), partitions below 2^23: no overflow


def pos(partition, offset):
    """(partition, offset) columns packed into one long that orders as the pair."""
    return partition.cast("long") * F.lit(POS_SHIFT) + offset


def partition_of(packed):
    """Bit arithmetic, exact for every long (a division through a double would round above 2^53, i.e. from partition
    8192 on), and floor-like for the -1 partition of `nonmonotonic_sends`."""
    return F.shiftright(packed, POS_BITS).cast("int")


def offset_of(packed):
    return packed.bitwiseAND(F.lit(POS_SHIFT - 1))


def _unpos(name: str):
    return partition_of(F.col(name)).alias("partition"), offset_of(F.col(name)).alias("offset")


def value_events(sends: DataFrame, reads: DataFrame, partitions: int) -> DataFrame:
    """Sends and reads as one frame hash-partitioned by (run, value): run, value, p, o, code (<= 0: a read, 0 live
    and -1 final, the phase riding in `code` so the exchange carries no extra column; else the send's
    1 + outcome * 4 + acks code) and x (a send's op_id, a read's t_ns)."""
    code = 1 + _index_of(F.col("outcome"), OUTCOMES) * 4 + _index_of(F.col("acks"), ACKS)
    send_rows = sends.select("run", "value", F.col("partition").alias("p"), F.col("offset").alias("o"),
                             code.alias("code"), F.col("op_id").alias("x"))
    read_rows = reads.select("run", "value", F.col("partition").alias("p"), F.col("offset").alias("o"),
                             F.when(F.col("phase") == "final", F.lit(-1)).otherwise(F.lit(0)).alias("code"),
                             F.col("t_ns").alias("x"))
    return send_rows.unionByName(read_rows).repartition(partitions, "run", "value")


def names_of_send_code(code: pd.Series) -> dict[str, list]:
    """outcome and acks back from `value_events`' send code; a name outside OUTCOMES or ACKS, which the code does
    not keep, as "?" (also outside them: the same code again)."""
    c = code.astype("int64") - 1
    return {"outcome": [OUTCOMES[i] if i < len(OUTCOMES) else "?" for i in c // 4],
            "acks": [ACKS[i] if i < len(ACKS) else "?" for i in c % 4]}


def value_positions(events: DataFrame) -> DataFrame:
    """One row per (run, value, partition, offset) sent or read: the hub every per-value and per-position kind
    is computed from.

    A send lands in the same group as the reads at its acked position. Columns: code (<= 0: reads only, else the
    send's code), n_reads, t_first (first read), op_id (of the send), live and fin (1 if a live consumer / the
    final drain read it there). events: `value_events`, whose (run, value) partitioning this keeps.
    """
    is_read = F.col("code") <= 0
    return events.groupBy("run", "value", "p", "o").agg(
        F.max("code").alias("code"),
        F.sum(is_read.cast("long")).alias("n_reads"),
        F.min(F.when(is_read, F.col("x"))).alias("t_first"),
        F.max(F.when(~is_read, F.col("x"))).alias("op_id"),
        F.max((F.col("code") == 0).cast("int")).alias("live"),
        F.max((F.col("code") == -1).cast("int")).alias("fin"))


def candidates(at_position: DataFrame, nonmonotonic: DataFrame) -> DataFrame:
    """Rows that are per-value instances, one boolean column `k_<kind>` per kind, by the three-level definitions
    (the exact path: every value `hub` could not decide from extremes).

    Columns: run, value, op_id, n (positions read), partition and offset (the first position read), t_read
    (first read), lar_p and lar_o (lost_after_read: the partition a live consumer read it in and the final drain
    lacks, and the live read's offset there), k_<kind>.
    at_position: `value_positions`; nonmonotonic: (run, op_id).
    """
    return candidates_of_per_value(per_value_exact(at_position), nonmonotonic)


def per_value_exact(at_position: DataFrame) -> DataFrame:
    """The per-value columns `candidates` applies the predicates to, by the second and third aggregation levels:
    run, value, code, op_id, s_p, s_o, s_fin, at_acked, n_pos, first_p, first_o, lar_p, lar_o, t_read. A local
    check computes the same columns on the driver for its ambiguous values (checkers.exact_files)."""
    read_here, send_here = F.col("n_reads") > 0, F.col("code") > 0
    at_partition = at_position.groupBy("run", "value", "p").agg(
        F.max("code").alias("code"), F.max("op_id").alias("op_id"),
        F.max(F.when(send_here, F.col("o"))).alias("s_o"),
        F.max(send_here & read_here).alias("at_acked"),
        F.sum(read_here.cast("long")).alias("n_pos"),
        F.min(F.when(read_here, F.col("o"))).alias("first_o"),
        F.min("t_first").alias("t_read"),
        F.max("fin").alias("fin_p"), F.max("live").alias("live_p"),
        F.min(F.when(F.col("live") == 1, F.col("o"))).alias("live_o"))
    read_here = F.col("n_pos") > 0
    after_read = (F.col("live_p") == 1) & (F.col("fin_p") == 0)    # read live here, absent from the drain here
    # min_by over the partition gives the first position exactly: first_o is already the least offset within it.
    return at_partition.groupBy("run", "value").agg(
        F.max("code").alias("code"), F.max("op_id").alias("op_id"),
        F.max(F.when(F.col("code") > 0, F.col("p"))).alias("s_p"), F.max("s_o").alias("s_o"),
        F.max(F.when(F.col("code") > 0, F.col("fin_p"))).alias("s_fin"),
        F.max("at_acked").alias("at_acked"), F.sum("n_pos").alias("n_pos"),
        F.min(F.when(read_here, F.col("p"))).alias("first_p"),
        F.min_by("first_o", F.when(read_here, F.col("p"))).alias("first_o"),
        F.min(F.when(after_read, F.col("p"))).alias("lar_p"),
        F.min_by("live_o", F.when(after_read, F.col("p"))).alias("lar_o"),
        F.min("t_read").alias("t_read"))


def candidates_of_per_value(per_value: DataFrame, nonmonotonic: DataFrame) -> DataFrame:
    """`candidates`' rows from `per_value_exact`'s columns, however they were computed: every kind's predicate."""
    summary = per_value_summary(F.col("code"), F.col("s_p"), F.col("s_o"), F.col("n_pos"), F.col("s_fin") == 1,
                                F.col("at_acked"), F.col("lar_p"))
    marked, flags = flagged(per_value, summary, nonmonotonic)
    out = marked.select("run", "value", "op_id", F.col("n_pos").alias("n"), F.col("first_p").alias("partition"),
                        F.col("first_o").alias("offset"), "t_read", "lar_p", "lar_o", *flags)
    return out.where(" OR ".join(f"k_{kind}" for kind in CANDIDATE_KINDS))


def per_value_summary(code, s_p, s_o, n_pos, s_fin, at_acked, lar_p) -> dict:
    """history.kinds.PER_VALUE_COLUMNS from a value's send code (`value_events`: <= 0 or NULL, not sent), its
    acked position, positions read, and where it was read: what every per-value predicate is written over."""
    sent = F.coalesce(code > 0, F.lit(False))
    outcome = F.floor((code - 1) / 4)
    columns = {"sent": sent, "ok": sent & (outcome == OK), "failed": sent & (outcome == FAIL),
               "indeterminate": sent & (outcome == INFO), "acked_level": sent & ((code - 1) % 4).isin(*ACKED_CODES),
               "s_p": s_p, "s_o": s_o, "n_pos": n_pos, "s_fin": s_fin, "at_acked": at_acked, "lar_p": lar_p}
    assert tuple(columns) == PER_VALUE_COLUMNS
    return columns


def flagged(frame: DataFrame, summary: dict, nonmonotonic: DataFrame) -> tuple[DataFrame, list]:
    """`frame` with `summary` (`per_value_summary`'s columns) as columns of those names and the nonmonotonic sends'
    mark joined on (run, op_id); and the k_<kind> columns of CANDIDATE_KINDS over it: each per-value kind's declared
    predicate (history.kinds.PREDICATES), k_nonmonotonic_send from the window's (run, op_id)s."""
    marked = frame.withColumns(summary).join(
        F.broadcast(nonmonotonic.withColumn("k_nonmonotonic_send", F.lit(True))), ["run", "op_id"], "left")
    flags = [F.coalesce(F.expr(pred), F.lit(False)).alias(f"k_{kind}") for kind, pred in PREDICATES.items()]
    return marked, flags + [F.coalesce(F.col("k_nonmonotonic_send"), F.lit(False)).alias("k_nonmonotonic_send")]


def acked_twice(placed: DataFrame, buckets: DataFrame) -> DataFrame:
    """(run, partition, offset) at which two or more of the `placed` sends (run, partition, offset, bucket) were
    acked, looking only inside `buckets` (run, partition, bucket): whichever bucketing found them crowded."""
    crowded = placed.join(F.broadcast(buckets), ["run", "partition", "bucket"], "left_semi")
    return crowded.groupBy("run", "partition", "offset").count().where(F.col("count") >= 2).drop("count")


SEND_DETAILS = ("op_id", "producer", "process", "acks", "idempotent", "t_invoke_ns", "t_complete_ns", "partition",
                "offset", "outcome")     # a send's columns `send_details` brings, after `run`


def send_details(sends: DataFrame, wanted: DataFrame) -> DataFrame:
    """The send columns of the wanted (run, op_id)s."""
    cols = sends.select("run", *SEND_DETAILS)
    return cols.join(F.broadcast(wanted), ["run", "op_id"], "left_semi")


LOOKED_UP = ("run", "partition", "offset", "value", "t_ns", "phase")     # a read's columns `values_at` brings


def values_at(reads: DataFrame, positions: DataFrame) -> DataFrame:
    """The reads at the given (run, partition, offset) positions: value, phase and when."""
    return reads.select(*LOOKED_UP).join(F.broadcast(positions), ["run", "partition", "offset"], "left_semi")


def reads_of(reads: DataFrame, values: DataFrame) -> DataFrame:
    """The reads of the given (run, value)s, in `values_at`'s columns."""
    return reads.select(*LOOKED_UP).join(F.broadcast(values), ["run", "value"], "left_semi")


def poll_gaps(reads: DataFrame, gather: bool = False) -> DataFrame:
    """Steps a -> b > a + 1 of a live consumer through a partition: (run, stream, seq of b, partition, a, b), stream
    a 64-bit hash of (run, consumer, partition). The consumer's name stays out of the sorted rows (it made them a
    third wider; `reads_at` finds it by (run, stream, seq)), and partition and offset ride as one long (`pos`)."""
    live = reads.where(F.col("phase") == "live") \
        .select("run", _stream(), "seq", pos(F.col("partition"), F.col("offset")).alias("pos"))
    live = one_task(live, gather)
    steps = Window.partitionBy("stream").orderBy("seq")     # one integer sort key first, as in nonmonotonic_sends
    gaps = live.withColumn("from_pos", F.lag("pos").over(steps)).where(F.col("pos") > F.col("from_pos") + 1)
    return gaps.select("run", "stream", "seq", *_unpos("pos"), offset_of(F.col("from_pos")).alias("from_offset"))


def _stream():
    return F.xxhash64("run", "consumer", "partition").alias("stream")


def reads_with(reads: DataFrame, keys: DataFrame) -> DataFrame:
    """consumer, value and t_ns of the reads with the given (run, consumer, partition, seq)
    (checkers.series_files.poll_gaps' keys)."""
    return reads.select("run", "consumer", "partition", "seq", "value", "t_ns") \
        .join(F.broadcast(keys), ["run", "consumer", "partition", "seq"], "left_semi")


def gaps_with_reads_between(reads: DataFrame, gaps: DataFrame) -> DataFrame:
    """The `gap` ids (of gaps: run, partition, from_offset, offset, gap) with some read strictly inside."""
    g = gaps.select("run", "partition", F.col("from_offset").alias("a"), F.col("offset").alias("b"), "gap")
    r = reads.select("run", "partition", "offset")
    inside = (r["run"] == g["run"]) & (r["partition"] == g["partition"]) & (r["offset"] > g["a"]) & \
        (r["offset"] < g["b"])
    return r.join(F.broadcast(g), inside).select("gap").distinct()


def reads_at(reads: DataFrame, keys: DataFrame) -> DataFrame:
    """consumer, value and t_ns of the reads with the given (run, stream, seq) (stream as in `poll_gaps`)."""
    return reads.select("run", _stream(), "seq", "consumer", "value", "t_ns") \
        .join(F.broadcast(keys), ["run", "stream", "seq"], "left_semi")


def small_frame(spark: SparkSession, rows, schema: str) -> DataFrame:
    """A driver-side table (a handful of keys, or a few hundred thousand) as a DataFrame to broadcast, e.g.
    "run int, op_id long". rows: a list of tuples, or a pandas frame whose columns are taken in the schema's order
    (column by column through numpy: on an anomaly-dense history a list of 600k tuples cost seconds to build).

    Built as an Arrow table, which the driver's JVM reads itself. A list of rows would be re-pickled by a Python
    worker on the executors, so a cluster would need a Python of our minor version there, for nothing.
    """
    fields = [f.split() for f in schema.split(",")]
    if isinstance(rows, pd.DataFrame):
        columns = [_column(rows.iloc[:, i], kind) for i, (_, kind) in enumerate(fields)]
    else:
        columns = [list(col) for col in zip(*rows)] if rows else [[]] * len(fields)
    return spark.createDataFrame(pa.table({name: pa.array(col, type=ARROW_TYPES[kind])
                                           for (name, kind), col in zip(fields, columns)}))


def _column(series: pd.Series, kind: str):
    if kind == "string":
        return series.astype(object).to_numpy()
    if series.isna().any():          # e.g. a timed-out send's offset: nulls kept
        return [None if pd.isna(x) else int(x) for x in series]
    return series.to_numpy(dtype="int64")
