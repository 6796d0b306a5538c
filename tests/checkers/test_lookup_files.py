"""The driver's look-ups (checkers.lookup_files) bring what Spark's do: the same rows, in the same dtypes, and the
same instances out of the whole anomaly pass of an anomaly-dense history."""
from __future__ import annotations

import pandas as pd
import pytest

from kafka_chaos.checkers import lookup_files
from kafka_chaos.checkers.spark import queries as q
from kafka_chaos.checkers.spark.collect import READ_COLUMNS, SEND_COLUMNS, load, to_pandas
from kafka_chaos.history.synthetic import write_synthetic_run
from kafka_chaos.history.synthetic.shapes import HEAVY

from .conftest import read, send, write_run


def ordered(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    return frame.sort_values(by).reset_index(drop=True)


@pytest.mark.spark
def test_sends_looked_up_by_op_id_equal_sparks_rows_and_dtypes(spark, tmp_path):
    sends = [send("a", offset=0), send("b", offset=None, outcome="info"), send("c", partition=None, offset=None,
                                                                             outcome="fail"), send("d", offset=1)]
    runs = {"x": write_run(tmp_path / "x", sends, []), "y": write_run(tmp_path / "y", sends[:2], [])}
    wanted = pd.DataFrame({"run": [0, 0, 0, 1, 1], "op_id": [1, 2, 9, 0, 3]})       # 9 and (1, 3): no such send
    columns = {c: SEND_COLUMNS[c] for c in q.SEND_DETAILS}
    mine = lookup_files.send_rows(runs, wanted, columns)
    theirs = to_pandas(q.send_details(load(spark, runs, "sends.parquet", SEND_COLUMNS),
                                      q.small_frame(spark, wanted, "run int, op_id long")))
    assert list(mine.columns) == list(theirs.columns) and dict(mine.dtypes) == dict(theirs.dtypes)
    pd.testing.assert_frame_equal(ordered(mine, ["run", "op_id"]), ordered(theirs, ["run", "op_id"]))
    assert sorted(zip(mine["run"], mine["op_id"])) == [(0, 1), (0, 2), (1, 0)]


@pytest.mark.spark
def test_reads_looked_up_by_position_equal_sparks_rows_and_dtypes(spark, tmp_path):
    reads = [read("a", offset=0), read("a", offset=0, consumer="c1"), read("b", partition=1, offset=0),
             read("z", partition=1, offset=1 << 20)]
    runs = {"x": write_run(tmp_path / "x", [], reads)}
    wanted = pd.DataFrame({"run": [0, 0, 0], "partition": [0, 1, 0], "offset": [0, 1 << 20, 7]})
    columns = {c: READ_COLUMNS[c] for c in q.LOOKED_UP if c != "run"}
    mine = lookup_files.read_rows(runs, wanted, columns)
    theirs = to_pandas(q.values_at(load(spark, runs, "reads.parquet", READ_COLUMNS),
                                   q.small_frame(spark, wanted, "run int, partition int, offset long")))
    assert list(mine.columns) == list(theirs.columns) and dict(mine.dtypes) == dict(theirs.dtypes)
    by = ["partition", "offset", "phase"]
    pd.testing.assert_frame_equal(ordered(mine, by), ordered(theirs, by))
    assert len(mine) == 3


@pytest.mark.spark
def test_an_anomaly_dense_history_gives_the_same_instances_with_either_look_up(spark, tmp_path, monkeypatch):
    from kafka_chaos.checkers.spark.anomalies import find_anomalies_spark
    run = write_synthetic_run(tmp_path / "heavy", sends=20_000, partitions=4, shape=HEAVY)
    monkeypatch.setattr(lookup_files, "MIN_KEYS", 10**12)        # Spark's look-ups
    theirs = find_anomalies_spark(spark, {"r": run}).instances
    calls = []
    original = lookup_files.send_rows
    monkeypatch.setattr(lookup_files, "send_rows", lambda *a: calls.append("send_rows") or original(*a))
    monkeypatch.setattr(lookup_files, "MIN_KEYS", 1)             # the driver's
    mine = find_anomalies_spark(spark, {"r": run}).instances
    assert calls == ["send_rows"]       # the reads at positions: none looked up, the pick found the divergent
    by = ["kind", "run_id", "partition", "offset", "value"]
    assert set(mine["kind"]) >= {"lost", "duplicate", "divergent", "recovered"}
    pd.testing.assert_frame_equal(ordered(mine, by), ordered(theirs, by))


def test_keys_too_spread_for_a_table_are_looked_up_in_a_hash_set_with_the_same_rows(tmp_path, monkeypatch):
    sends = [send("a", offset=0), send("b", offset=1), send("c", offset=2)]
    reads = [read("a", offset=0), read("b", offset=1), read("b", partition=1, offset=1)]
    runs = {"x": write_run(tmp_path / "x", sends, reads)}
    columns = {c: SEND_COLUMNS[c] for c in q.SEND_DETAILS}
    read_columns = {c: READ_COLUMNS[c] for c in q.LOOKED_UP if c != "run"}
    near = lookup_files.send_rows(runs, pd.DataFrame({"run": [0, 0], "op_id": [0, 2]}), columns)
    far = lookup_files.send_rows(runs, pd.DataFrame({"run": [0, 0, 0], "op_id": [0, 2, 10**15]}), columns)
    pd.testing.assert_frame_equal(ordered(near, ["op_id"]), ordered(far, ["op_id"]))
    assert list(near["op_id"]) == [0, 2]
    at = pd.DataFrame({"run": [0, 0], "partition": [0, 1], "offset": [1, 1]})
    spread = pd.concat([at, pd.DataFrame({"run": [0], "partition": [0], "offset": [-5]})], ignore_index=True)
    by = ["partition", "offset"]
    pd.testing.assert_frame_equal(ordered(lookup_files.read_rows(runs, at, read_columns), by),
                                  ordered(lookup_files.read_rows(runs, spread, read_columns), by))
    assert len(lookup_files.read_rows(runs, at, read_columns)) == 2
