"""The per-value pass in one aggregation: the common case decided from min/max, the rest sent to the exact path.

`queries.value_positions` + `candidates` decide every per-value kind in three aggregation levels (value,
partition, offset) -> (value, partition) -> value. On 10M sends that is the dearest part of the check, and for
almost every value the answer is trivial: one send, read at one position, in one partition, by the live consumer
and the final drain. So the same exchange keyed by (run, value) feeds a single aggregation that keeps, per value,
the least and greatest read position, final-read partition and live-read partition:
- when each pair is equal (the value was read at one position, finally in one partition, live in one), every
  per-value kind follows from these numbers exactly as the three levels would compute it;
- otherwise the value is `ambiguous` (read at two positions: at least a duplicate) and comes back as a key only;
  `anomalies` re-runs the three-level definitions on just those values (`value_positions` over a filtered scan).

Positions are packed into one long, partition * 2^40 + offset, so the least position is the first one read in
(partition, offset) order, as the reference defines it.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kafka_chaos.checkers.spark.queries import (
    CANDIDATE_KINDS,
    acked_twice,
    flagged,
    offset_of,
    partition_of,
    per_value_summary,
    pos,
)

HUB_FLAGS = ("k_ambiguous", "k_stray")
LAST = ("last_p", "last_o")      # the last position read: an ambiguous value's second (divergent.known_positions)
READS = "n_reads"                 # how many reads: tells whether the reads at the first and last are all of them
LIVE, FINAL = 1, 2                # `value_summary`'s phases bits
SENT = ("code", "s_p", "s_o")     # the send's code (queries.value_events) and acked position: an ambiguous value's
                                  # send, for its exact pass (divergent.decide_ambiguous)


def value_summary(events: DataFrame) -> DataFrame:
    """Per (run, value), from `queries.value_events`: the send's code, op_id and position, the extremes of its
    reads, and which phases read it (`phases`: 1 live, 2 final, OR-ed). One hash aggregation, numeric buffers only;
    the events' (run, value) partitioning satisfies it.

    Where the value was read is taken from the read extremes alone: read at one position (r_min = r_max), every
    read is in that position's partition, so the final and live partitions need no buffers of their own; read at
    two, the value is ambiguous and decided exactly. Nine buffers where there were thirteen: the heavy history's
    aggregation, 25M rows into 10M values, is the check's largest CPU cost."""
    is_read, is_send = F.col("code") <= 0, F.col("code") > 0
    read_pos = pos(F.col("p"), F.col("o"))
    return events.groupBy("run", "value").agg(
        F.max("code").alias("code"),
        F.max(F.when(is_send, F.col("x"))).alias("op_id"),
        F.max(F.when(is_send, F.col("p"))).alias("s_p"),
        F.max(F.when(is_send, F.col("o"))).alias("s_o"),
        F.sum(is_read.cast("long")).alias("n_reads"),
        F.min(F.when(is_read, read_pos)).alias("r_min"), F.max(F.when(is_read, read_pos)).alias("r_max"),
        F.min(F.when(is_read, F.col("x"))).alias("t_read"),
        F.bit_or(F.when(is_read, F.when(F.col("code") == -1, F.lit(FINAL)).otherwise(F.lit(LIVE)))).alias("phases"))


def candidates_fast(events: DataFrame, nonmonotonic: DataFrame) -> DataFrame:
    """The rows of `queries.candidates`' per-value part, plus the last position read (LAST), the number of reads
    (READS), the send (SENT), k_ambiguous (decide it exactly) and k_stray (read somewhere else than an acked position
    it was sent to: the only reads that can make a position divergent without a second acked send there)."""
    return candidates_of_summary(value_summary(events), nonmonotonic)


def candidates_of_summary(s: DataFrame, nonmonotonic: DataFrame, slim: bool = False) -> DataFrame:
    """`candidates_fast` over `value_summary`'s rows, however they were computed (checkers.summary_files).

    slim: only run, row (the summary's own row number), lar_p, lar_o and the k_ flags, for a driver that holds the
    summary and derives the other columns from it (summary_files.candidate_rows)."""
    ambiguous = F.coalesce(F.col("r_min") != F.col("r_max"), F.lit(False))
    read = F.col("n_reads") > 0
    read_p = partition_of(F.col("r_min"))
    f_p = F.when((F.col("phases").bitwiseAND(F.lit(FINAL))) != 0, read_p)     # unambiguous: every read is at r_min
    live = (F.col("phases").bitwiseAND(F.lit(LIVE))) != 0
    s_pos = F.when(F.col("s_o") >= 0, pos(F.col("s_p"), F.col("s_o")))
    at_acked = F.coalesce(F.col("r_min") == s_pos, F.lit(False))
    after_read = F.coalesce(live, F.lit(False)) & f_p.isNull()      # read live, never by the final drain
    # unambiguous: read at one position at most, finally in one partition, live in one
    summary = per_value_summary(F.col("code"), F.col("s_p"), F.col("s_o"), read.cast("long"),
                                f_p == F.col("s_p"), at_acked, F.when(after_read, read_p))
    marked, flags = flagged(s, summary, nonmonotonic)
    # acks=0 sends have no acked position (offset -1): runs with them take the full divergent pass instead
    stray = F.col("ok") & ~(((F.col("code") - 1) % 4) == 0) & read & ~at_acked
    lar = ["lar_p", F.when(after_read, offset_of(F.col("r_min"))).alias("lar_o")]
    ks = [*flags, ambiguous.alias("k_ambiguous"), F.coalesce(stray, F.lit(False)).alias("k_stray")]
    out = marked.select("run", "row", *lar, *ks) if slim else marked.select(
        "run", "value", "op_id", read.cast("long").alias("n"),
        read_p.alias("partition"), offset_of(F.col("r_min")).alias("offset"), "t_read", *lar,
        partition_of(F.col("r_max")).alias(LAST[0]), offset_of(F.col("r_max")).alias(LAST[1]), READS, *SENT, *ks)
    return out.where(" OR ".join(f"k_{k}" for k in (*CANDIDATE_KINDS, "ambiguous", "stray")))


def crowded_buckets(sends: DataFrame) -> DataFrame:
    """(run, partition, bucket) of the 32768-offset buckets in which two or more sends were acked at one offset:
    the one way two values can both sit where they were acked, be read there, and so make a divergent position no
    stray read points to.

    Per bucket, the number of acked sends against the number of distinct offsets among them, counted in a bitmap
    (Spark's bitmap_construct_agg): equal unless an offset was acked twice. The bitmaps merge map-side, so only a
    few hundred rows cross the shuffle, where grouping by position would move every send."""
    placed = sends.where(F.col("partition").isNotNull() & (F.col("offset") >= 0))
    per = placed.groupBy("run", "partition", F.bitmap_bucket_number("offset").alias("bucket")).agg(
        F.count(F.lit(1)).alias("n"),
        F.bitmap_count(F.bitmap_construct_agg(F.bitmap_bit_position("offset"))).alias("distinct"))
    return per.where(F.col("n") > F.col("distinct")).select("run", "partition", "bucket")


def double_acked(sends: DataFrame, buckets: DataFrame) -> DataFrame:
    """(run, partition, offset) at which two or more sends were acked, within the `crowded_buckets`."""
    placed = sends.where(F.col("partition").isNotNull() & (F.col("offset") >= 0)) \
        .select("run", "partition", "offset", F.bitmap_bucket_number("offset").alias("bucket"))
    return acked_twice(placed, buckets)


def position_extremes(reads: DataFrame) -> DataFrame:
    """(run, partition, offset) read with more than one value: the full divergent pass, for runs with acks=0 sends
    (no acked position to compare reads with) or too many candidate positions. Two 64-bit hashes of the value: a
    position with two different values differs in one of them unless both collide (then it is missed, p ~ 2^-96)."""
    h1, h2 = F.xxhash64("value"), F.hash("value")
    return reads.groupBy("run", "partition", "offset") \
        .agg(F.min(h1).alias("a"), F.max(h1).alias("b"), F.min(h2).alias("c"), F.max(h2).alias("d")) \
        .where((F.col("a") != F.col("b")) | (F.col("c") != F.col("d"))).select("run", "partition", "offset")
