"""The downsampled frames the report draws: they must keep the history's totals while bounding its size."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_chaos.base.errors import HarnessError
from kafka_chaos.history.schema import FAULTS_SCHEMA
from kafka_chaos.report.data import (
    ReportOptions,
    anomaly_markers,
    bucket_width_s,
    fault_windows,
    load_run,
    offset_ranges,
    partition_series,
    reads_near,
    timeline,
)


@pytest.mark.parametrize("duration_s, width", [(60, 1.0), (600, 1.0), (3 * 3600, 10.0), (10, 0.2)])
def test_bucket_width_is_one_second_for_ordinary_runs_and_wider_for_long_ones(duration_s, width):
    assert bucket_width_s(duration_s, max_buckets=1500) == width


def test_timeline_counts_every_send_once_by_outcome(make_run):
    run = load_run(make_run())
    tl = timeline(run, ReportOptions())
    for outcome in ("ok", "fail", "info"):
        rate = getattr(tl, f"{outcome}_per_s")
        assert round(rate.sum() * tl.bucket_s) == (run.sends["outcome"] == outcome).sum()


def test_timeline_stays_within_the_bucket_limit(make_run):
    run = load_run(make_run(duration_s=600))
    tl = timeline(run, ReportOptions(max_buckets=100))
    assert len(tl.t_s) <= 101
    assert tl.bucket_s == 10.0


def test_latency_quantiles_rise_during_the_isolation(make_run):
    run = load_run(make_run(sends=6000))
    tl = timeline(run, ReportOptions())
    during = np.nanmedian(tl.latency_ms["p50"][(tl.t_s >= 21) & (tl.t_s < 34)])
    before = np.nanmedian(tl.latency_ms["p50"][tl.t_s < 19])
    assert during > 5 * before
    assert np.all(np.nan_to_num(tl.latency_ms["p99"]) >= np.nan_to_num(tl.latency_ms["p50"]))


def test_fault_windows_pair_starts_with_heals_and_unhealed_faults_last_to_the_end(make_run):
    windows = fault_windows(load_run(make_run(isolate_at_s=20, heal_at_s=35, kill_at_s=48, duration_s=60)))
    assert [(w.fault, w.nodes, w.start_s, w.end_s, w.healed) for w in windows] == [
        ("leader-isolate", (1,), 20.0, 35.0, True), ("kill", (3,), 48.0, 60.0, False)]
    assert [w.effect for w in windows] == ["net", "kill"]


def test_overlapping_faults_of_the_same_kind_pair_in_order(make_run):
    path = make_run(with_faults=False)
    start = json.loads((path / "meta.json").read_text())["start_ns"]
    rows = [(1, "start", [1]), (2, "start", [2]), (3, "heal", [1]), (5, "heal", [2])]
    pq.write_table(pa.Table.from_pylist([
        {"t_ns": start + t * 10**9, "action": a, "fault": "pause", "nodes": n, "details": '{"effect": "pause"}'}
        for t, a, n in rows], schema=FAULTS_SCHEMA), path / "history" / "faults.parquet")
    windows = fault_windows(load_run(path))
    assert [(w.nodes, w.start_s, w.end_s) for w in windows] == [((1,), 1.0, 3.0), ((2,), 2.0, 5.0)]


def test_partition_series_keeps_only_the_changes_and_the_last_sample(make_run):
    run = load_run(make_run())
    (p0,) = partition_series(run, [0])
    samples = run.cluster[run.cluster["partition"] == 0]
    assert len(p0.t_s) < len(samples) / 10
    assert p0.t_s[-1] == (samples["t_ns"].max() - run.start_ns) / 1e9
    assert -1 in p0.leader           # the election gap of the sample run: no leader
    assert list(p0.isr_size[:2]) == [3, 1]


def test_anomaly_markers_are_capped_per_kind_but_span_the_whole_kind(make_run):
    run = load_run(make_run(lost=12, duplicates=2))
    markers = anomaly_markers(run, ReportOptions(max_markers_per_kind=5))
    lost = markers[markers["kind"] == "lost"]
    assert len(lost) == 5
    assert (markers["kind"] == "duplicate").sum() == 2
    all_lost = run.anomalies[run.anomalies["kind"] == "lost"]["t_complete_ns"]
    assert lost["t_s"].min() == pytest.approx((all_lost.min() - run.start_ns) / 1e9)
    assert lost["t_s"].max() == pytest.approx((all_lost.max() - run.start_ns) / 1e9)


def test_reads_near_an_offset_come_from_the_final_drain_and_lack_the_lost_offsets(make_run):
    path = make_run(lost=3)
    run = load_run(path)
    lost = run.anomalies[run.anomalies["kind"] == "lost"]
    places = [(0, int(o)) for o in lost["offset"]]
    reads = reads_near(path, places, span=2)
    assert not set(lost["offset"]) & set(reads["offset"])
    assert set(reads["partition"]) == {0}
    assert all(any(abs(o - lo) <= 2 for _, lo in places) for o in reads["offset"])
    assert 0 < len(reads) <= 4 * len(places)   # the neighbours only, never the whole log
    assert not reads.duplicated(["partition", "offset"]).any()


def test_offset_ranges_join_consecutive_offsets_and_say_how_many_were_left_out():
    assert offset_ranges([7, 1, 2, 3, 5, 8], limit=10) == (["1-3", "5", "7-8"], 0)
    assert offset_ranges([1, 3, 5, 7], limit=2) == (["1", "3"], 2)


def test_a_results_directory_without_history_is_bad_input(tmp_path):
    (tmp_path / "meta.json").write_text('{"run_id": "x"}')
    with pytest.raises(HarnessError, match="no history"):
        load_run(tmp_path)


def test_a_verdict_that_is_not_json_is_bad_input(make_run):
    path = make_run()
    (path / "verdict.json").write_text("{truncated")
    with pytest.raises(HarnessError, match="verdict.json"):
        load_run(path)
