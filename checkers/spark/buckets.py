"""Which values need looking at: offset buckets whose reads are exactly their acked sends are skipped.

The per-value pass (checkers.spark.hub) brings every send and read of a value together by an exchange keyed on the
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

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_chaos.checkers.reference import Counts
from kafka_chaos.checkers.spark import queries as q
from kafka_chaos.history.schema import ACKED

BUCKET = 64                     # offsets per bucket: one 64-bit mask of the acked offsets
SEND, FINAL, LIVE = 1, 2, 3     # the multisets summed per bucket
UNPLACED = 4                    # sends without an acked position: only counted, for the sends summary
KEYS = ["run", "partition", "bucket"]
MAX_UNCLEAN_SHARE = 0.5         # more unclean buckets than this share: the whole history goes through the pass
MAX_NARROWED_ROWS = 0.25        # ...or more of the rows than this share (`narrows`)
MAX_ROWS = 400_000_000          # sends + reads; beyond, the bucket table (1.56M buckets at 100M sends and 200M reads,
                                # the whole check's tree then at 9.3 GiB) stays out of the driver and the whole history
                                # goes through the pass. At 100M sends narrowing halves the check: 371.5 -> 199.4 s
MAX_PUSHED_RANGES = 64          # unclean offset ranges picked by a Parquet-pushable predicate; beyond, by a join


def _placed(sends: DataFrame):
    """Sends with an acked position: ok, acks=1/all, a partition and an offset."""
    placed = (F.col("outcome") == "ok") & F.col("acks").isin(*ACKED) & F.col("partition").isNotNull() & \
        (F.col("offset") >= 0)
    return F.coalesce(placed, F.lit(False))          # a null offset is no position: never placed


def _unplaced():
    """Not `_placed`, spelled so that Parquet can evaluate it on row-group statistics and dictionaries: a row group
    whose sends are all ok, acks=1/all and at an offset is skipped without being decoded."""
    return F.col("outcome").isNull() | (F.col("outcome") != "ok") | F.col("acks").isNull() | \
        ~F.col("acks").isin(*ACKED) | F.col("partition").isNull() | F.col("offset").isNull() | (F.col("offset") < 0)


def _bucket():
    return F.floor(F.col("offset") / F.lit(BUCKET))


def bucket_sums(sends: DataFrame, reads: DataFrame) -> DataFrame:
    """(run, partition, bucket, kind, code, n, lo, hi, mask): per bucket and multiset (SEND, FINAL, LIVE), the count,
    the sums of the low and high 32 bits of xxhash64(value, offset), and for sends the OR of the offsets' bits in
    the bucket; code is the sends' queries.summary_code (0 for reads). Sends without an acked position are
    counted per run and code (kind UNPLACED, no partition or bucket), so that `sends_summary` needs no scan of its
    own: it ran as a 10M-row job of its own, 2.5 s in one task slot at the start of the 10M check."""
    placed = _placed(sends)
    s = sends.select("run", F.when(placed, F.col("partition")).alias("partition"),
                     F.when(placed, F.col("offset")).alias("offset"), "value",
                     F.when(placed, F.lit(SEND)).otherwise(F.lit(UNPLACED)).alias("kind"),
                     q.summary_code().alias("code"))
    r = reads.select("run", "partition", "offset", "value",
                     F.when(F.col("phase") == "final", F.lit(FINAL)).otherwise(F.lit(LIVE)).alias("kind"),
                     F.lit(0).alias("code"))
    h = F.xxhash64("value", "offset")
    rows = s.unionByName(r).select(
        "run", "partition", _bucket().alias("bucket"), "kind", "code",
        h.bitwiseAND(F.lit(0xFFFFFFFF)).alias("lo"), F.shiftrightunsigned(h, 32).alias("hi"),
        F.when(F.col("kind") == SEND, F.expr(f"shiftleft(cast(1 as bigint), cast(pmod(offset, {BUCKET}) as int))"))
        .alias("mask"))
    return rows.groupBy("run", "partition", "bucket", "kind", "code").agg(
        F.count(F.lit(1)).alias("n"), F.sum("lo").alias("lo"), F.sum("hi").alias("hi"), F.bit_or("mask").alias("mask"))


def sends_summary(sums: pd.DataFrame) -> pd.DataFrame:
    """queries.sends_summary's (run, outcome, acks, idempotent, count) from `bucket_sums`, outcome and acks as
    their codes (queries.summary_of_codes)."""
    sent = sums[sums["kind"].isin((SEND, UNPLACED))]
    codes = sent.groupby(["run", "code"], as_index=False)["n"].sum().rename(columns={"n": "count"})
    return q.summary_of_codes(codes)


def _merged_masks(sums: pd.DataFrame) -> pd.DataFrame:
    """Per bucket with acked sends, (run, partition, bucket, mask): the OR of its masks (one row per summary code in
    `bucket_sums`, so sends of two producer settings in one bucket are two rows), a bit per offset acked."""
    sent = sums[sums["kind"] == SEND].sort_values(KEYS)
    if not len(sent):
        return pd.DataFrame({c: pd.Series(dtype="int64" if c != "mask" else "Int64") for c in (*KEYS, "mask")})
    keys = sent[KEYS].astype("int64").to_numpy()
    masks = sent["mask"].astype("int64").to_numpy()
    starts = np.flatnonzero(np.r_[True, (keys[1:] != keys[:-1]).any(axis=1)])
    merged = pd.DataFrame(keys[starts], columns=KEYS)
    return merged.assign(mask=pd.array(np.bitwise_or.reduceat(masks, starts), dtype="Int64"))   # a left merge's
    # missing masks then stay integers: through float64 the low bits of a mask with bit 63 set were lost


def _distinct_offsets(sums: pd.DataFrame, index: pd.Index) -> pd.Series:
    """Per bucket of `index`, how many distinct offsets its acked sends have: their merged mask's bits."""
    merged = _merged_masks(sums)
    found = pd.Series(np.bitwise_count(merged["mask"].to_numpy("int64").view(np.uint64)).astype("int64"),
                      index=pd.MultiIndex.from_frame(merged[KEYS]))
    return found.reindex(index).fillna(0).astype("int64")


def acked_at(sums: pd.DataFrame, at: pd.DataFrame) -> np.ndarray:
    """Per position (run, partition, offset) of `at`: whether a send was acked there, read off the bucket sums'
    masks (no scan)."""
    at = at[["run", "partition", "offset"]].astype("int64")
    with_mask = at.assign(bucket=at["offset"] // BUCKET).merge(_merged_masks(sums), on=KEYS, how="left")
    mask = with_mask["mask"].fillna(0).astype("int64").to_numpy().view(np.uint64)
    bit = (with_mask["offset"].to_numpy() % BUCKET).astype(np.uint64)
    return ((mask >> bit) & np.uint64(1)).astype(bool)


def judge_buckets(sums: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """From `bucket_sums`: the unclean buckets (run, partition, bucket), the crowded ones among them (an offset acked
    twice), and how many buckets there were."""
    sums = sums[sums["kind"].isin((SEND, FINAL, LIVE))]
    if not len(sums):
        empty = pd.DataFrame({k: pd.Series(dtype="int64") for k in KEYS})
        return empty, empty, 0
    sums = sums.astype({c: "int64" for c in ("run", "partition", "bucket", "kind", "n", "lo", "hi")})
    wide = sums.pivot_table(index=KEYS, columns="kind", values=["n", "lo", "hi"], aggfunc="sum", fill_value=0)
    col = {(v, k): wide[(v, k)] if (v, k) in wide else pd.Series(0, index=wide.index)
           for v in ("n", "lo", "hi") for k in (SEND, FINAL, LIVE)}
    n1 = col[("n", SEND)]
    distinct = _distinct_offsets(sums, wide.index)
    crowded = (n1 > 0) & (distinct < n1)

    def k_times(kind: int, at_least: int) -> pd.Series:
        n = col[("n", kind)]
        k = n // n1.where(n1 > 0, 1)
        same = (n == k * n1) & (col[("lo", kind)] == k * col[("lo", SEND)]) & \
            (col[("hi", kind)] == k * col[("hi", SEND)])
        return same & (k >= at_least)

    clean = (n1 > 0) & k_times(FINAL, 1) & k_times(LIVE, 0) & ~crowded
    frame = wide.index.to_frame(index=False)
    return frame[~clean.to_numpy()].reset_index(drop=True), frame[crowded.to_numpy()].reset_index(drop=True), \
        len(frame)


def narrows(sums: pd.DataFrame, unclean: pd.DataFrame, total: int, everything: set[int] = frozenset()) -> bool:
    """Whether the per-value pass runs on the rows of the `unclean` buckets alone: they are at most MAX_UNCLEAN_SHARE
    of the `total` buckets and MAX_NARROWED_ROWS of the rows (sends and reads; the sends without an acked position
    and every row of the runs in `everything` go through the pass either way). The narrowed rows are cached
    (anomalies._per_value), which pays when they are few and costs more than it saves when they are many: the
    anomaly-dense 10M-send bench history checked beside the clean one (43% of the buckets, 45% of the rows) took
    96-104 s narrowed and 56 s through the whole pass; the tiled real history (5% of its rows narrowed) gains from
    it. Between 5% and 45% it was not measured: 25% is a guess in between."""
    if len(unclean) > MAX_UNCLEAN_SHARE * total:
        return False
    n = sums["n"].astype("int64").to_numpy()
    whole = sums["run"].isin(sorted(everything)).to_numpy(bool)
    inside = int(sums[~whole].merge(unclean[KEYS], on=KEYS)["n"].astype("int64").sum())
    always = int(n[whole | (sums["kind"] == UNPLACED).to_numpy(bool)].sum())
    return inside + always <= MAX_NARROWED_ROWS * int(n.sum())


def reads_summary(sums: pd.DataFrame) -> pd.DataFrame:
    """queries.reads_summary's counts from `bucket_sums`, which sums every read: (run, phase, partition,
    count), phase "final" or "live" (any other phase counts as live: only the drain's reads are told apart)."""
    reads = sums[sums["kind"].isin((FINAL, LIVE))]
    out = reads.groupby(["run", "kind", "partition"], as_index=False)["n"].sum()
    return pd.DataFrame({"run": out["run"].astype("int64"),
                         "phase": ["final" if k == FINAL else "live" for k in out["kind"]],
                         "partition": out["partition"].astype("int64"), "count": out["n"].astype("int64")})


def bucket_keys(spark: SparkSession, buckets: pd.DataFrame) -> DataFrame:
    return q.small_frame(spark, buckets[KEYS], "run int, partition int, bucket long")


def offset_ranges(buckets: pd.DataFrame) -> list[tuple[int, int, int, int]]:
    """(run, partition, first offset, last offset) covering the buckets (run, partition, bucket), adjacent buckets
    merged into one range."""
    ranges: list[list[int]] = []
    for r, p, b in sorted({(int(r), int(p), int(b)) for r, p, b in
                           zip(buckets["run"], buckets["partition"], buckets["bucket"])}):
        if ranges and ranges[-1][:2] == [r, p] and ranges[-1][3] == b * BUCKET - 1:
            ranges[-1][3] = (b + 1) * BUCKET - 1
        else:
            ranges.append([r, p, b * BUCKET, (b + 1) * BUCKET - 1])
    return [tuple(x) for x in ranges]


def in_unclean(spark: SparkSession, sends: DataFrame, reads: DataFrame, unclean: pd.DataFrame,
               everything: set[int]) -> tuple[DataFrame, DataFrame]:
    """The sends and reads the per-value pass needs: rows in unclean buckets, sends without an acked position, and
    every row of the runs in `everything`.

    A few unclean ranges are picked by a predicate Spark pushes into the Parquet reader (`run` is a constant per
    file, so only partition and offset reach it): row groups outside every range, and for sends without a non-ok
    outcome, are skipped undecoded. On 10M sends (12 of 156k buckets unclean) this step's executor CPU fell from ~7 s
    to 2-3 s. Many ranges would make a predicate too long to compile and to test per row group: a join picks them.
    """
    whole = F.col("run").isin(*sorted(everything)) if everything else F.lit(False)
    ranges = offset_ranges(unclean)
    if len(ranges) <= MAX_PUSHED_RANGES:
        inside = F.lit(False)
        for r, p, lo, hi in ranges:
            inside = inside | ((F.col("run") == r) & (F.col("partition") == p) & F.col("offset").between(lo, hi))
        return sends.where(inside | _unplaced() | whole), reads.where(inside | whole)
    keys = F.broadcast(bucket_keys(spark, unclean).withColumn("hit", F.lit(True)))
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
    placed = sends.where(_placed(sends)).select("run", "partition", "offset", _bucket().alias("bucket"))
    return q.acked_twice(placed, bucket_keys(spark, crowded))


def nonmonotonic_buckets(nonmono: pd.DataFrame) -> pd.DataFrame:
    """The buckets of the nonmonotonic sends (run, op_id, partition, offset)."""
    return pd.DataFrame({"run": nonmono["run"].astype("int64"), "partition": nonmono["partition"].astype("int64"),
                         "bucket": nonmono["offset"].astype("int64") // BUCKET})


def run_summaries(run_ids: list[str], send_summary: pd.DataFrame, read_summary: pd.DataFrame):
    """Per run: its Counts, acks levels, idempotence flags and final reads per partition, from the sends and reads
    summaries (`sends_summary`, `reads_summary`, or Spark's queries of the same columns)."""
    counts, acks, idempotent, final_reads = {}, {}, {}, {}
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
        fin = r[r["phase"] == "final"].groupby("partition")["count"].sum()
        final_reads[run_id] = {int(p): int(n) for p, n in fin.items()}
    return counts, acks, idempotent, final_reads
