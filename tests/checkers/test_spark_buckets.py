"""Which rows the per-value pass reads: unclean buckets become offset ranges a Parquet reader can skip row groups by."""
import pandas as pd

from kafka_chaos.checkers.spark_buckets import BUCKET, offset_ranges


def buckets(*rows):
    return pd.DataFrame(rows, columns=["run", "partition", "bucket"])


def test_adjacent_buckets_of_one_partition_become_one_range():
    assert offset_ranges(buckets((0, 3, 11), (0, 3, 10), (0, 3, 12))) == [(0, 3, 10 * BUCKET, 13 * BUCKET - 1)]


def test_a_gap_another_partition_or_another_run_starts_a_new_range():
    got = offset_ranges(buckets((0, 3, 10), (0, 3, 12), (0, 4, 13), (1, 3, 13)))
    assert got == [(0, 3, 10 * BUCKET, 11 * BUCKET - 1), (0, 3, 12 * BUCKET, 13 * BUCKET - 1),
                   (0, 4, 13 * BUCKET, 14 * BUCKET - 1), (1, 3, 13 * BUCKET, 14 * BUCKET - 1)]


def test_a_bucket_listed_twice_is_one_range_and_none_give_none():
    assert offset_ranges(buckets((2, 0, 0), (2, 0, 0))) == [(2, 0, 0, BUCKET - 1)]
    assert offset_ranges(buckets()) == []
