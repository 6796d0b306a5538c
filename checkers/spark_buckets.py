"""Which values need looking at: offset buckets whose reads are exactly their acked sends are skipped.

The per-value pass (checkers.spark_hub) brings every send and read of a value together by an exchange keyed on the
value: on 10M sends that is 30M rows hashed into a 10M-entry table, most of the check's time, for values that are
almost all trivially fine (acked at one position, read there and nowhere else). Values are unique in a run
(docs/history.md), so a value's rows can only be: its send, at its acked position if it has one; and its reads.

So first, per run, partition and bucket of BUCKET offsets, three multisets are summed up in one aggregation that
merges map-side (a few hundred thousand rows cross the shuffle, not 30M): the acked sends' (value, offset) pairs,
the final drain's and the live consumers' reads. A bucket is *clean* when the drain read each acked pair k >= 1
times and the live consumers each j >= 0 times, nothing else, and no offset was acked twice. In a clean bucket no
value can be an instance of any per-value kind (each was acked there, read there, and nowhere else: a read of it
elsewhere would be a second send of the value), and no position is divergent. Every other bucket is *unclean*.

Multisets are compared by count and by the sums of the two 32-bit halves of a 64-bit hash of (value, offset): an
unclean bucket taken for clean needs both sums to agree by chance (p ~ 2^-64 per bucket). Offsets acked twice are
counted with a 64-bit mask of the offsets present. Buckets of nonmonotonic sends are unclean too, so that pass sees
them.

The per-value pass then runs on the rows in unclean buckets, every send without an acked position (failed, timed
out, acks=0: few, and always looked at), and every row of runs with acknowledged acks=0 writes (no offset to
bucket). A value read there whose send lies in a clean bucket shows up as read-but-not-sent; those values alone are
fetched from the whole history (`with_whole_values`), so every value the pass decides has all of its rows.
"""
from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_chaos.checkers import spark_queries as q
from kafka_chaos.checkers.spark_collect import to_pandas
from kafka_chaos.history.schema import ACKED

BUCKET = 64                     # offsets per bucket: one 64-bit mask of the acked offsets
SEND, FINAL, LIVE = 1, 2, 3     # the multisets summed per bucket
MULTISETS = {"s": SEND, "f": FINAL, "l": LIVE}
KEYS = ["run", "partition", "bucket"]
MAX_UNCLEAN_SHARE = 0.5         # more unclean buckets than this share: the whole history goes through the pass


def _placed(sends: DataFrame):
    """Sends with an acked position: ok, acks=1/all, a partition and an offset."""
    placed = (F.col("outcome") == "ok") & F.col("acks").isin(*ACKED) & F.col("partition").isNotNull() & \
        (F.col("offset") >= 0)
    return F.coalesce(placed, F.lit(False))          # a null offset is no position: never placed


def _bucket():
    return F.floor(F.col("offset") / F.lit(BUCKET))


def bucket_sums(sends: DataFrame, reads: DataFrame) -> DataFrame:
    """One row per (run, partition, bucket): for each multiset x in s (acked sends), f (final reads), l (live
    reads) the count n_x and the sums lo_x, hi_x of the low and high 32 bits of xxhash64(value, offset); and the
    number of distinct offsets among the acked sends."""
    s = sends.where(_placed(sends)).select("run", "partition", "offset", "value", F.lit(SEND).alias("kind"))
    r = reads.select("run", "partition", "offset", "value",
                     F.when(F.col("phase") == "final", F.lit(FINAL)).otherwise(F.lit(LIVE)).alias("kind"))
    h = F.xxhash64("value", "offset")
    rows = s.unionByName(r).select(
        "run", "partition", _bucket().alias("bucket"), "kind",
        h.bitwiseAND(F.lit(0xFFFFFFFF)).alias("lo"), F.shiftrightunsigned(h, 32).alias("hi"),
        F.when(F.col("kind") == SEND, F.expr(f"shiftleft(cast(1 as bigint), cast(pmod(offset, {BUCKET}) as int))"))
        .alias("mask"))
    sums = []
    for x, kind in MULTISETS.items():
        mine = F.col("kind") == kind
        sums += [F.count(F.when(mine, F.lit(1))).alias(f"n_{x}"),
                 F.coalesce(F.sum(F.when(mine, F.col("lo"))), F.lit(0)).alias(f"lo_{x}"),
                 F.coalesce(F.sum(F.when(mine, F.col("hi"))), F.lit(0)).alias(f"hi_{x}")]
    return rows.groupBy(*KEYS).agg(*sums, F.coalesce(F.bit_count(F.bit_or("mask")), F.lit(0)).cast("long")
                                   .alias("distinct"))


def _k_times(x: str, at_least: int):
    """Multiset x holds each acked (value, offset) k >= at_least times and nothing else (by count and hash sums)."""
    k = F.expr(f"n_{x} div nullif(n_s, 0)")
    same = (F.col(f"n_{x}") == k * F.col("n_s")) & (F.col(f"lo_{x}") == k * F.col("lo_s")) & \
        (F.col(f"hi_{x}") == k * F.col("hi_s")) & (k >= at_least)
    return F.coalesce(same, F.lit(False))


def judge_buckets(sums: DataFrame, pool: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame, int, pd.DataFrame]:
    """From `bucket_sums`, judged in Spark so that only the unclean buckets come back (10M sends make 156,000
    buckets, 100M 1.6 million): the unclean buckets (run, partition, bucket), the crowded ones among them (an
    offset acked twice), how many buckets there were, and the reads summary (see `reads_summary`)."""
    crowded = F.col("distinct") < F.col("n_s")
    clean = (F.col("n_s") > 0) & _k_times("f", 1) & _k_times("l", 0) & ~crowded
    marked = sums.select(*KEYS, clean.alias("clean"), crowded.alias("crowded"), "n_f", "n_l").persist()
    try:
        unclean = to_pandas(marked.where(~F.col("clean")).select(*KEYS, "crowded"), "bucket sums", pool)
        per_partition = to_pandas(marked.groupBy("run", "partition").agg(
            F.count(F.lit(1)).alias("buckets"), F.sum("n_f").alias("final"), F.sum("n_l").alias("live")),
            "bucket sums: reads", pool)
    finally:
        marked.unpersist()
    unclean = unclean.astype({"run": "int64", "partition": "int64", "bucket": "int64", "crowded": "bool"})
    keys = unclean[KEYS].reset_index(drop=True)
    return keys, keys[unclean["crowded"].to_numpy()].reset_index(drop=True), \
        int(per_partition["buckets"].sum()), reads_summary(per_partition)


def reads_summary(per_partition: pd.DataFrame) -> pd.DataFrame:
    """spark_queries' old reads summary, from the bucket sums (which count every read): (run, phase, partition,
    count) with phase "final" or "live" (any other phase counts as live: only the drain's reads are told apart)."""
    rows = [(int(r), phase, int(p), int(n)) for r, p, f, live in
            zip(per_partition["run"], per_partition["partition"], per_partition["final"], per_partition["live"])
            for phase, n in (("final", f), ("live", live)) if n]
    return pd.DataFrame(rows, columns=["run", "phase", "partition", "count"]).astype(
        {"run": "int64", "partition": "int64", "count": "int64"})


def bucket_keys(spark: SparkSession, buckets: pd.DataFrame) -> DataFrame:
    return q.small_frame(spark, [(int(r), int(p), int(b)) for r, p, b in
                                 zip(buckets["run"], buckets["partition"], buckets["bucket"])],
                         "run int, partition int, bucket long")


def in_unclean(spark: SparkSession, sends: DataFrame, reads: DataFrame, unclean: pd.DataFrame,
               everything: set[int]) -> tuple[DataFrame, DataFrame]:
    """The sends and reads the per-value pass needs: rows in unclean buckets, sends without an acked position, and
    every row of the runs in `everything`."""
    keys = F.broadcast(bucket_keys(spark, unclean).withColumn("hit", F.lit(True)))
    whole = F.col("run").isin(*sorted(everything)) if everything else F.lit(False)
    s = sends.withColumn("bucket", F.when(_placed(sends), _bucket())) \
        .join(keys, KEYS, "left").where(F.col("hit").isNotNull() | ~_placed(sends) | whole) \
        .drop("bucket", "hit")
    r = reads.withColumn("bucket", _bucket()).join(keys, KEYS, "left") \
        .where(F.col("hit").isNotNull() | whole).drop("bucket", "hit")
    return s, r


def with_whole_values(spark: SparkSession, sends: DataFrame, reads: DataFrame, part_s: DataFrame,
                      part_r: DataFrame, values: list[tuple[int, str]]) -> tuple[DataFrame, DataFrame]:
    """part_s/part_r with every row of `values` (run, value) taken from the whole history instead."""
    keys = F.broadcast(q.small_frame(spark, values, "run int, value string"))
    return (part_s.join(keys, ["run", "value"], "left_anti").unionByName(sends.join(keys, ["run", "value"],
                                                                                    "left_semi")),
            part_r.join(keys, ["run", "value"], "left_anti").unionByName(reads.join(keys, ["run", "value"],
                                                                                    "left_semi")))


def double_acked(spark: SparkSession, sends: DataFrame, crowded: pd.DataFrame) -> DataFrame:
    """(run, partition, offset) at which two or more sends were acked, within the `crowded` buckets."""
    placed = sends.where(_placed(sends)).withColumn("bucket", _bucket()) \
        .join(F.broadcast(bucket_keys(spark, crowded)), KEYS, "left_semi")
    return placed.groupBy("run", "partition", "offset").count().where(F.col("count") >= 2).drop("count")


def nonmonotonic_buckets(nonmono: pd.DataFrame) -> pd.DataFrame:
    """The buckets of the nonmonotonic sends (run, op_id, partition, offset)."""
    return pd.DataFrame({"run": nonmono["run"].astype("int64"), "partition": nonmono["partition"].astype("int64"),
                         "bucket": nonmono["offset"].astype("int64") // BUCKET})
