"""The driver's bucket counts (checkers.bucket_files) are Spark's bucket sums but for the hashes, and a local check
that takes them in place of Spark's sums (with the driver's pick of rows, checkers.narrow_files) gets the same
instances."""
from __future__ import annotations

import random

import pandas as pd
import pytest

from kafka_chaos.checkers import bucket_files
from kafka_chaos.checkers.spark import buckets
from kafka_chaos.checkers.spark.collect import READ_COLUMNS, SEND_COLUMNS, load, to_pandas
from kafka_chaos.history.synthetic import write_synthetic_run
from kafka_chaos.history.synthetic.shapes import HEAVY

from .conftest import read, send, write_run

KEY = ["run", "partition", "bucket", "kind", "code"]


def spark_sums(spark, runs) -> pd.DataFrame:
    return to_pandas(buckets.bucket_sums(load(spark, runs, "sends.parquet", SEND_COLUMNS),
                                         load(spark, runs, "reads.parquet", READ_COLUMNS)))


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows without the hashes, in one order and one set of dtypes."""
    frame = frame[[*KEY, "n", "mask"]].astype({"run": "int64", "partition": "Int64", "bucket": "Int64",
                                               "kind": "int64", "code": "int64", "n": "int64", "mask": "Int64"})
    return frame.sort_values(KEY, na_position="first").reset_index(drop=True)


def random_run(directory, seed: int, sends: int = 3000):
    """Two producer settings, acks 0/1/all, ok/info/fail, sends without a partition, offsets acked twice, reads
    live and final, some where nothing was acked, values read at two positions, rows shuffled."""
    rng = random.Random(seed)
    rows, reads, next_offset = [], [], {}
    for i in range(sends):
        p = rng.randrange(3)
        off = next_offset.get(p, 0) + rng.choice((1, 1, 1, 2))
        next_offset[p] = off
        off = off - 1 if rng.random() < 0.01 else off            # acked where the previous one was
        outcome, acks = rng.choice(("ok",) * 8 + ("info", "fail")), rng.choice(("1", "all", "all", "0"))
        placed = outcome == "ok" or rng.random() < 0.3
        rows.append(send(f"v{i}", partition=p if rng.random() > 0.01 else None, offset=off if placed else None,
                         outcome=outcome, acks=acks, idempotent=rng.choice((True, False)), op_id=i))
        if placed and rng.random() < 0.97:
            reads.append(read(f"v{i}", partition=p, offset=off))
        if rng.random() < 0.5:
            reads.append(read(f"v{i}", partition=p, offset=off if placed else off + 100, consumer="c1"))
        if rng.random() < 0.01:        # read elsewhere too: a duplicate
            reads.append(read(f"v{i}", partition=(p + 1) % 3, offset=off + 7, consumer="c1"))
    reads.append(read("stray", partition=1, offset=10**6, consumer="c2"))
    rng.shuffle(rows)
    rng.shuffle(reads)
    return write_run(directory, rows, reads)


@pytest.mark.spark
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_histories_give_the_counts_and_masks_of_sparks_bucket_sums(spark, tmp_path, seed):
    runs = {"a": random_run(tmp_path / "a", seed), "b": random_run(tmp_path / "b", seed + 10, sends=500)}
    mine, theirs = bucket_files.runs_bucket_counts(runs), spark_sums(spark, runs)
    pd.testing.assert_frame_equal(comparable(mine), comparable(theirs))
    assert (mine["lo"] == 0).all() and (mine["hi"] == 0).all()
    # judged on counts alone, a bucket Spark's hashes find clean is clean, and the crowded buckets are the same
    unclean, crowded, total = buckets.judge_buckets(mine)
    their_unclean, their_crowded, their_total = buckets.judge_buckets(theirs)
    assert total == their_total and len(crowded) > 0
    pd.testing.assert_frame_equal(crowded.astype("int64"), their_crowded.astype("int64"))
    assert set(map(tuple, unclean.astype("int64").to_numpy())) <= set(map(tuple, their_unclean.astype("int64")
                                                                              .to_numpy()))


@pytest.mark.spark
def test_a_local_check_of_an_anomaly_dense_history_gets_the_instances_of_sparks_bucket_sums(spark, tmp_path,
                                                                                            monkeypatch):
    from kafka_chaos.checkers.spark import anomalies
    run = write_synthetic_run(tmp_path / "heavy", sends=20_000, partitions=4, shape=HEAVY)
    counted = []
    counts = bucket_files.bucket_counts
    monkeypatch.setattr(bucket_files, "bucket_counts", lambda *a: counted.append(a) or counts(*a))
    mine = anomalies.find_anomalies_spark(spark, {"r": run})
    assert len(counted) == 1                    # the driver's counts, no Spark sums
    monkeypatch.setattr(anomalies, "ONE_TASK_ROWS", 0)        # Spark's queries, as on a cluster
    theirs = anomalies.find_anomalies_spark(spark, {"r": run})
    assert len(counted) == 1
    by = ["kind", "run_id", "partition", "offset", "value"]
    assert set(mine.instances["kind"]) >= {"lost", "duplicate", "divergent", "recovered"}
    pd.testing.assert_frame_equal(mine.instances.sort_values(by).reset_index(drop=True),
                                  theirs.instances.sort_values(by).reset_index(drop=True))
    assert mine.counts == theirs.counts and mine.final_reads == theirs.final_reads


def sums_of(buckets_per_run: dict[int, list[int]]) -> pd.DataFrame:
    """Bucket sums with, per run, one bucket per entry: that many acked sends and as many final reads."""
    rows = [{"run": run, "partition": 0, "bucket": b, "kind": kind, "code": 0, "n": n, "lo": 0, "hi": 0, "mask": 0}
            for run, sizes in buckets_per_run.items() for b, n in enumerate(sizes)
            for kind in (buckets.SEND, buckets.FINAL)]
    return pd.DataFrame(rows)


def keys(pairs: list[tuple[int, int]]) -> pd.DataFrame:
    return pd.DataFrame({"run": [r for r, _ in pairs], "partition": 0, "bucket": [b for _, b in pairs]})


def test_narrowing_takes_half_of_the_buckets_and_a_quarter_of_the_rows_at_most():
    sums = sums_of({0: [10] * 10, 1: [100] * 10})          # 20 buckets; run 1 holds 2,000 of the 2,200 rows
    assert buckets.narrows(sums, keys([(0, b) for b in range(10)]), 20)            # half the buckets, 200 rows
    assert not buckets.narrows(sums, keys([(1, b) for b in range(10)]), 20)        # half the buckets, 2,000 rows
    assert not buckets.narrows(sums, keys([(0, b) for b in range(10)] + [(1, 0)]), 20)     # 11 of 20 buckets
    quarter = sums_of({0: [50, 50, 50], 1: [50]})          # 4 buckets of 100 rows each
    assert buckets.narrows(quarter, keys([(1, 0)]), 4)                             # 100 of 400 rows: a quarter
    assert not buckets.narrows(quarter, keys([(1, 0), (0, 0)]), 4)                 # 200 of 400 rows
    assert not buckets.narrows(sums_of({0: [50, 50, 49], 1: [50]}), keys([(1, 0)]), 4)     # 100 of 398 rows
    # every row of a run in `everything` goes through the pass: it counts whole, however few of its buckets
    assert not buckets.narrows(sums, keys([(0, 0)]), 20, everything={1})
    assert buckets.narrows(sums, keys([(1, 0)]), 20, everything={0})               # 200 + 200 of 2,200 rows
