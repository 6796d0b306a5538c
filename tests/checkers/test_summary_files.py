"""The per-value summary the driver computes in Arrow over the rows it picked (checkers.summary_files): the same
rows as Spark's hub.value_summary, and the sent values filled back in from the kept sends."""
from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest

from kafka_chaos.checkers import exact_files, narrow_files, summary_files

from .conftest import read, send, write_run
from .test_bucket_files import random_run


def arrow_summary(run) -> pd.DataFrame:
    sends, reads = (pq.read_table(run / "history" / name) for name in (narrow_files.SENDS, narrow_files.READS))
    return comparable(summary_files.value_summary(sends, reads).to_pandas())


def spark_summary(spark, run) -> pd.DataFrame:
    from kafka_chaos.checkers.spark import hub
    from kafka_chaos.checkers.spark import queries as q
    from kafka_chaos.checkers.spark.collect import READ_COLUMNS, SEND_COLUMNS, load, to_pandas
    sends, reads = (load(spark, {"r": run}, name, columns) for name, columns in
                    ((narrow_files.SENDS, SEND_COLUMNS), (narrow_files.READS, READ_COLUMNS)))
    return comparable(to_pandas(hub.value_summary(q.value_events(sends, reads, 2))).drop(columns="run"))


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[list(summary_files.SCHEMA)].astype(
        {c: "Int64" for c, t in summary_files.SCHEMA.items() if t != "string"}).sort_values("value") \
        .reset_index(drop=True)


@pytest.mark.spark
@pytest.mark.parametrize("seed", [1, 2])
def test_random_histories_summarise_to_sparks_rows(spark, tmp_path, seed):
    run = random_run(tmp_path / "run", seed)
    mine, theirs = arrow_summary(run), spark_summary(spark, run)
    assert len(mine) > 3000 and mine["phases"].isna().any() and (mine["r_min"] != mine["r_max"]).any()
    pd.testing.assert_frame_equal(mine, theirs)


@pytest.mark.spark
def test_edge_rows_summarise_to_sparks_rows(spark, tmp_path):
    sends = [send("unread", offset=4), send("unplaced", offset=None, outcome="info"),
             send("no partition", partition=None, offset=None, outcome="fail"), send("odd acks", acks="-1", offset=9),
             send("twice", offset=2)]
    reads = [read("phantom", offset=3), read("phantom", offset=3, consumer="c1"), read("twice", offset=2),
             read("twice", partition=1, offset=2, consumer="c1"), read("odd acks", offset=9)]
    run = write_run(tmp_path / "run", sends, reads)
    mine = arrow_summary(run)
    pd.testing.assert_frame_equal(mine, spark_summary(spark, run))
    row = mine.set_index("value")
    assert row.loc["unread", "n_reads"] == 0 and pd.isna(row.loc["unread", "phases"])
    assert row.loc["phantom", "code"] == 0 and pd.isna(row.loc["phantom", "op_id"])      # read live: 0, never sent
    assert row.loc["twice", "phases"] == summary_files.LIVE | summary_files.FINAL


def test_the_ambiguous_values_exact_columns_are_written_beside_the_summary(tmp_path):
    sends = [send("twice", offset=2), send("once", offset=3), send("thrice", offset=4)]
    reads = [read("twice", offset=2), read("twice", partition=1, offset=2, consumer="c1"), read("once", offset=3),
             read("thrice", offset=4), read("thrice", offset=5, consumer="c1"), read("thrice", offset=6)]
    run = write_run(tmp_path / "run", sends, reads)
    s, r = (pq.read_table(run / "history" / name) for name in (narrow_files.SENDS, narrow_files.READS))
    summary, at = summary_files.write_summary(s, r, tmp_path)
    assert summary["row"].to_pylist() == [0, 1, 2]
    assert set(map(tuple, at.to_numpy())) == {(0, 2), (1, 2), (0, 4), (0, 5), (0, 6)}
    exact = pq.read_table(tmp_path / exact_files.NAME).to_pandas().set_index("value")
    assert sorted(exact.index) == ["thrice", "twice"]                    # "once" is decided from its extremes
    assert exact.loc["twice", "n_pos"] == 2 and exact.loc["thrice", "n_pos"] == 3
    assert len(pq.read_table(tmp_path / summary_files.NAME)) == 3


def test_an_empty_pick_writes_an_empty_summary(tmp_path):
    run = write_run(tmp_path / "run", [], [])
    sends, reads = (pq.read_table(run / "history" / name) for name in (narrow_files.SENDS, narrow_files.READS))
    summary, at = summary_files.write_summary(sends, reads, tmp_path)
    assert not len(summary) and not len(at)
    assert pq.read_table(tmp_path / summary_files.NAME).schema.names == list(summary_files.FILE_SCHEMA)


@pytest.mark.spark
@pytest.mark.parametrize("seed", [3, 4])
def test_the_driver_builds_the_pass_rows_from_sparks_flags_as_spark_would_whole(spark, tmp_path, seed):
    from concurrent.futures import Future

    from kafka_chaos.checkers import series_files
    from kafka_chaos.checkers.spark import hub
    from kafka_chaos.checkers.spark import queries as q
    from kafka_chaos.checkers.spark.collect import READ_COLUMNS, SEND_COLUMNS, load, to_pandas
    runs = {"a": random_run(tmp_path / "a", seed), "b": random_run(tmp_path / "b", seed + 10, sends=500)}
    nonmonotonic = Future()
    nonmonotonic.set_result(series_files.runs_nonmonotonic_sends(runs))
    picked = narrow_files.runs_narrowed(runs, {narrow_files.SENDS: SEND_COLUMNS, narrow_files.READS: READ_COLUMNS},
                                        nonmonotonic, tmp_path / "picked")
    mono = q.small_frame(spark, nonmonotonic.result()[["run", "op_id"]], "run int, op_id long")
    summary = load(spark, picked.summaries, summary_files.NAME, summary_files.FILE_SCHEMA)
    slim = picked.candidate_rows(to_pandas(hub.candidates_of_summary(summary, mono, slim=True)))
    whole = to_pandas(hub.candidates_of_summary(summary, mono))
    s, r = (load(spark, picked.dirs, name, columns) for name, columns in
            ((narrow_files.SENDS, SEND_COLUMNS), (narrow_files.READS, READ_COLUMNS)))
    aggregated = to_pandas(hub.candidates_fast(q.value_events(s, r, 2), mono))      # Spark's own aggregation
    slim, whole, aggregated = (f.sort_values(["run", "value"]).reset_index(drop=True)
                               for f in (slim, whole, aggregated))
    assert len(slim) > 100 and slim["k_ambiguous"].any() and slim["lar_p"].notna().any()
    pd.testing.assert_frame_equal(slim, whole)          # columns, order and dtypes too
    pd.testing.assert_frame_equal(whole, aggregated)
