"""The exact per-value columns the driver computes for the ambiguous values (checkers.exact_files) are Spark's
(queries.per_value_exact), and Spark's predicates over them give the three-level path's rows."""
from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest

from kafka_chaos.checkers import exact_files, narrow_files

from .conftest import read, send, write_run
from .test_bucket_files import random_run

pytestmark = pytest.mark.spark
KEY = ["value"]


def spark_frames(spark, run):
    from kafka_chaos.checkers.spark import queries as q
    from kafka_chaos.checkers.spark.collect import READ_COLUMNS, SEND_COLUMNS, load
    sends, reads = (load(spark, {"r": run}, name, columns) for name, columns in
                    ((narrow_files.SENDS, SEND_COLUMNS), (narrow_files.READS, READ_COLUMNS)))
    return q.value_positions(q.value_events(sends, reads, 2))


def driver_columns(spark, run, tmp_path):
    from kafka_chaos.checkers.spark.collect import load
    sends, reads = (pq.read_table(run / "history" / name) for name in (narrow_files.SENDS, narrow_files.READS))
    (tmp_path / "ex" / "history").mkdir(parents=True)
    pq.write_table(exact_files.per_value_exact(sends, reads), tmp_path / "ex" / "history" / exact_files.NAME)
    return load(spark, {"r": tmp_path / "ex"}, exact_files.NAME, exact_files.SCHEMA)


def ordered(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(KEY).reset_index(drop=True)


def assert_same(spark, run, tmp_path):
    from kafka_chaos.checkers.spark import queries as q
    from kafka_chaos.checkers.spark.collect import to_pandas
    mono = q.small_frame(spark, [(0, 1)], "run int, op_id long")
    at = spark_frames(spark, run)
    theirs_columns = to_pandas(q.per_value_exact(at))
    mine = driver_columns(spark, run, tmp_path)
    mine_columns = to_pandas(mine)
    columns = ["run", *exact_files.SCHEMA]
    pd.testing.assert_frame_equal(ordered(mine_columns[columns]), ordered(theirs_columns[columns]))
    pd.testing.assert_frame_equal(ordered(to_pandas(q.candidates_of_per_value(mine, mono))),
                                  ordered(to_pandas(q.candidates(at, mono))))
    return mine_columns


@pytest.mark.parametrize("seed", [1, 2])
def test_random_histories_give_sparks_exact_columns_and_rows(spark, tmp_path, seed):
    columns = assert_same(spark, random_run(tmp_path / "run", seed), tmp_path)
    assert len(columns) > 3000 and (columns["n_pos"] > 1).any() and columns["lar_p"].notna().any()


def test_edge_values_give_sparks_exact_columns_and_rows(spark, tmp_path):
    sends = [send("twice", offset=2), send("elsewhere", offset=5), send("unplaced", offset=None, outcome="info"),
             send("no partition", partition=None, offset=None, outcome="fail"), send("odd acks", acks="-1", offset=9),
             send("lost live", partition=2, offset=1)]
    reads = [read("twice", offset=2), read("twice", partition=1, offset=2, consumer="c1"),
             read("twice", partition=1, offset=7), read("elsewhere", offset=6, consumer="c1"),
             read("elsewhere", partition=1, offset=6), read("unplaced", partition=1, offset=3),
             read("unplaced", partition=0, offset=3, consumer="c1"), read("phantom", offset=8),
             read("phantom", offset=9, consumer="c1"), read("odd acks", offset=9),
             read("lost live", partition=2, offset=1, consumer="c1"), read("lost live", partition=3, offset=1)]
    columns = assert_same(spark, write_run(tmp_path / "run", sends, reads), tmp_path).set_index("value")
    assert columns.loc["twice", "n_pos"] == 3 and columns.loc["twice", "first_o"] == 2
    assert columns.loc["lost live", "lar_p"] == 2 and columns.loc["lost live", "lar_o"] == 1
    assert pd.isna(columns.loc["phantom", "op_id"]) and columns.loc["phantom", "code"] == 0
