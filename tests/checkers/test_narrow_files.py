"""The driver's pick of an anomaly-dense history's rows for the per-value pass (checkers.narrow_files): only plainly
clean values are left out, every value and every position it keeps is whole, and the check finds the same instances
with the pick as with every row."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from kafka_chaos.checkers import narrow_files

from .conftest import read, send, write_run
from .test_bucket_files import random_run


def kept(tmp_path: Path, sends: list[dict], reads: list[dict], nonmonotonic=(), span: int | None = None,
         monkeypatch=None) -> tuple[set, set]:
    """(values of the sends kept, (value, partition, offset) of the reads kept)."""
    run = write_run(tmp_path / "run", sends, reads)
    s, r = (pq.read_table(run / "history" / name) for name in (narrow_files.SENDS, narrow_files.READS))
    if span is not None:
        monkeypatch.setattr(narrow_files, "MAX_SPAN", span)
    keep_s, keep_r = narrow_files.narrowed(s, r, lambda: np.array(nonmonotonic, np.int64))
    s, r = s.filter(keep_s).to_pylist(), r.filter(keep_r).to_pylist()
    return {x["value"] for x in s}, {(x["value"], x["partition"], x["offset"]) for x in r}


def clean(value: str, offset: int, partition: int = 0, live: bool = False) -> tuple[list[dict], list[dict]]:
    """A value acked at (partition, offset) and read there by the final drain (and a live consumer)."""
    reads = [read(value, partition=partition, offset=offset)]
    if live:
        reads.append(read(value, partition=partition, offset=offset, consumer="c1"))
    return [send(value, partition=partition, offset=offset)], reads


def history(*parts) -> tuple[list[dict], list[dict]]:
    sends, reads = [], []
    for s, r in parts:
        sends += s
        reads += r
    return sends, reads


def test_a_plainly_clean_value_is_left_out_and_nothing_else(tmp_path):
    sends, reads = history(clean("a", 0), clean("b", 1, live=True), clean("c", 0, partition=1))
    assert kept(tmp_path, sends, reads) == (set(), set())


def test_a_value_read_where_it_was_acked_and_elsewhere_goes_in_whole_with_the_other_position(tmp_path):
    sends, reads = history(clean("a", 0), clean("b", 1), clean("c", 2))
    reads.append(read("a", offset=5))                      # read again where nothing was acked
    reads.append(read("a", offset=1, consumer="c1"))       # and where b was acked: b's position goes in too
    values, at = kept(tmp_path, sends, reads)
    assert values == {"a", "b"}
    assert at == {("a", 0, 0), ("a", 0, 5), ("a", 0, 1), ("b", 0, 1)}


@pytest.mark.parametrize("case", ["live only", "never read", "acked twice", "another value there", "not ok",
                                  "acks 0", "nonmonotonic"])
def test_an_unclean_position_keeps_every_row_there_and_the_values_whole(tmp_path, case):
    sends, reads = history(clean("a", 0), clean("b", 1), clean("z", 9))
    if case == "live only":
        reads[1]["consumer"], reads[1]["phase"] = "c1", "live"
    elif case == "never read":
        del reads[1]
    elif case == "acked twice":
        sends.append(send("b2", offset=1))
    elif case == "another value there":
        reads.append(read("x", offset=1, consumer="c1"))
    elif case == "not ok":
        sends[1]["outcome"] = "info"
    elif case == "acks 0":
        sends[1]["acks"] = "0"
    values, at = kept(tmp_path, sends, reads, nonmonotonic=[1] if case == "nonmonotonic" else ())
    assert "b" in values and not values & {"a", "z"}
    assert at == {(r["value"], 0, 1) for r in reads if r["offset"] == 1}      # every read there, nothing else


def test_a_send_without_an_acked_position_goes_in_when_read_when_it_could_be_lost_or_when_nonmonotonic(tmp_path):
    sends, reads = history(clean("a", 0))
    sends += [send("read", offset=None, outcome="info"), send("unread", offset=None, outcome="info"),
              send("failed", partition=None, offset=None, outcome="fail"), send("acks0", offset=7, acks="0"),
              send("no offset", offset=None), send("no partition", partition=None, offset=None, acks="1"),
              send("mono", offset=None, outcome="info", op_id=99)]
    reads.append(read("read", offset=3))
    assert kept(tmp_path, sends, reads, nonmonotonic=[99]) == ({"read", "no offset", "mono"}, {("read", 0, 3)})


def test_positions_too_spread_for_a_table_are_numbered_by_a_sort_with_the_same_pick(tmp_path, monkeypatch):
    sends, reads = history(clean("a", 0), clean("b", 1), clean("c", 10**9), clean("d", 4, partition=2))
    reads.append(read("b", offset=7))
    sends.append(send("i", offset=None, outcome="info"))
    dense = kept(tmp_path / "dense", sends, reads)
    assert dense == ({"b"}, {("b", 0, 1), ("b", 0, 7)})          # i: no kind unread
    assert kept(tmp_path / "sorted", sends, reads, span=16, monkeypatch=monkeypatch) == dense


@pytest.mark.spark
@pytest.mark.parametrize("seed", [1, 2])
def test_the_check_finds_the_same_instances_with_the_pick_as_with_every_row(spark, tmp_path, monkeypatch, seed):
    from kafka_chaos.checkers.spark import anomalies
    runs = {"a": random_run(tmp_path / "a", seed), "b": random_run(tmp_path / "b", seed + 10, sends=500)}
    picks = []
    pick = narrow_files.runs_narrowed
    monkeypatch.setattr(narrow_files, "runs_narrowed", lambda *a: picks.append(pick(*a)) or picks[-1])
    mine = anomalies.find_anomalies_spark(spark, runs)
    rows = sum(pq.read_metadata(d / "history" / n).num_rows for d in runs.values()
               for n in (narrow_files.SENDS, narrow_files.READS))
    assert len(picks) == 1 and 0 < picks[0].rows < rows / 2          # most rows were left out
    every_row = narrow_files.Picked(dict(runs), rows, picks[0].counts)
    monkeypatch.setattr(narrow_files, "runs_narrowed", lambda *a: every_row)
    theirs = anomalies.find_anomalies_spark(spark, runs)
    by = ["kind", "run_id", "partition", "offset", "value"]
    assert len(mine.instances) and {"duplicate", "lost", "divergent"} <= set(mine.instances["kind"])
    pd.testing.assert_frame_equal(mine.instances.sort_values(by).reset_index(drop=True),
                                  theirs.instances.sort_values(by).reset_index(drop=True))
    assert mine.counts == theirs.counts and mine.final_reads == theirs.final_reads


def test_runs_are_picked_each_into_its_own_copy_with_the_bucket_counts_of_their_files(tmp_path):
    from concurrent.futures import Future

    from kafka_chaos.checkers import bucket_files
    from kafka_chaos.checkers.spark.collect import READ_COLUMNS, SEND_COLUMNS

    runs = {"a": random_run(tmp_path / "a", 5), "b": write_run(tmp_path / "b", *history(clean("x", 0))),
            "c": write_run(tmp_path / "c", [send("never read", offset=3)], [])}
    nonmonotonic = Future()
    nonmonotonic.set_result(pd.DataFrame({"run": [0], "op_id": [7]}))
    picked = narrow_files.runs_narrowed(runs, {narrow_files.SENDS: SEND_COLUMNS, narrow_files.READS: READ_COLUMNS},
                                        nonmonotonic, tmp_path / "picked")
    assert list(picked.dirs) == ["a", "b", "c"]
    rows = {run_id: [pq.read_metadata(d / "history" / n).num_rows for n in (narrow_files.SENDS, narrow_files.READS)]
            for run_id, d in picked.dirs.items()}
    assert rows["b"] == [0, 0] and rows["c"] == [1, 0] and sum(rows["a"]) > 0
    assert picked.rows == sum(map(sum, rows.values()))
    assert 7 in pq.read_table(picked.dirs["a"] / "history" / narrow_files.SENDS)["op_id"].to_pylist()
    assert pq.read_schema(picked.dirs["a"] / "history" / narrow_files.SENDS).names == list(SEND_COLUMNS)
    pd.testing.assert_frame_equal(picked.counts, bucket_files.runs_bucket_counts(runs))


def test_a_run_that_keeps_most_of_its_rows_is_not_copied(tmp_path):
    from concurrent.futures import Future

    from kafka_chaos.checkers.spark.collect import READ_COLUMNS, SEND_COLUMNS

    unacked = [send(f"u{i}", offset=i, acks="0") for i in range(10)]          # acks=0: no acked position anywhere
    runs = {"zero": write_run(tmp_path / "zero", unacked, [read(f"u{i}", offset=i) for i in range(10)]),
            "clean": write_run(tmp_path / "clean", *history(clean("x", 0), clean("y", 1)))}
    nonmonotonic = Future()
    nonmonotonic.set_result(pd.DataFrame({"run": [], "op_id": []}))
    picked = narrow_files.runs_narrowed(runs, {narrow_files.SENDS: SEND_COLUMNS, narrow_files.READS: READ_COLUMNS},
                                        nonmonotonic, tmp_path / "picked")
    assert picked.dirs == {"zero": runs["zero"], "clean": tmp_path / "picked" / "1"}
    copied = tmp_path / "picked" / "0" / "history"
    assert picked.rows == 20 and not any((copied / name).exists() for name in (narrow_files.SENDS, narrow_files.READS))
    assert picked.summaries == {"zero": tmp_path / "picked" / "0", "clean": tmp_path / "picked" / "1"}
    assert picked.held is None          # its summary is not held beside the pass: Spark brings back every column


def test_a_killed_checks_copies_are_removed_by_the_next_check_and_a_live_ones_kept(tmp_path, monkeypatch):
    import os
    import subprocess
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()                                                     # a process that has exited: its copies are stale
    stale, live = tmp_path / f"kafka-chaos-narrowed-{gone.pid}-abc", tmp_path / f"kafka-chaos-narrowed-{os.getpid()}-x"
    unnamed = tmp_path / "kafka-chaos-narrowed-q1w2e3"                 # an older check's name, with no process id
    for d in (stale, live, unnamed):
        (d / "0" / "history").mkdir(parents=True)
    with narrow_files.scratch() as mine:
        assert Path(mine).name.startswith(f"kafka-chaos-narrowed-{os.getpid()}-")
        assert not stale.exists() and live.exists() and unnamed.exists()
    assert not Path(mine).exists()
