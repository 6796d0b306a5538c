"""The benchmark's history shapes (history/synthetic/shapes.py, tile.py): each holds the anomalies it promises, and
a tiled run holds its source's anomalies once per tile."""
from __future__ import annotations

import json

import pandas as pd

from kafka_chaos.checkers import reference
from kafka_chaos.history.synthetic import write_synthetic_run
from kafka_chaos.history.synthetic.shapes import HEAVY
from kafka_chaos.history.synthetic.tile import tile_run


def kinds(run) -> pd.Series:
    sends = pd.read_parquet(run / "history/sends.parquet")
    reads = pd.read_parquet(run / "history/reads.parquet")
    return reference.find_anomalies(sends, reads)["kind"].value_counts()


def test_clean_and_heavy(tmp_path):
    clean = kinds(write_synthetic_run(tmp_path / "clean", sends=20_000, partitions=4))
    assert set(clean.index) <= {"recovered"}              # the leader kill's timeouts that reached the log
    heavy_run = write_synthetic_run(tmp_path / "heavy", sends=20_000, partitions=4, shape=HEAVY)
    heavy = kinds(heavy_run)
    assert {"lost", "lost_after_read", "duplicate", "divergent", "recovered"} <= set(heavy.index)
    sends = pd.read_parquet(heavy_run / "history/sends.parquet")
    assert 0.25 < (sends["outcome"] == "info").mean() < 0.35
    assert 0.005 < heavy["lost"] / (sends["outcome"] == "ok").sum() < 0.02
    assert not sends["value"].duplicated().any()


def test_tiled_run_repeats_its_source(tmp_path):
    source = write_synthetic_run(tmp_path / "src", sends=5_000, partitions=3, shape=HEAVY)
    tiled = tile_run(source, tmp_path / "tiled", 15_000)
    assert len(pd.read_parquet(tiled / "history/sends.parquet")) == 15_000
    assert (kinds(tiled) == 3 * kinds(source)).all()
    cut = tile_run(source, tmp_path / "cut", 12_500)     # the last tile cut at half
    assert len(pd.read_parquet(cut / "history/sends.parquet")) == 12_500


def test_a_tiled_run_repeats_its_node_logs_fencing_lines_shifted_with_each_tile(tmp_path):
    from kafka_chaos.history.controller_log import fencing_events

    source = write_synthetic_run(tmp_path / "src", sends=2_000, partitions=3, shape=HEAVY)
    (source / "logs").mkdir(exist_ok=True)
    (source / "logs" / "run-c101.log").write_text(
        "[2026-11-27 18:19:30,123] INFO [QuorumController id=101] Fencing broker 2 at epoch 7 because its session "
        "has timed out. (org.apache.kafka.controller.ReplicationControlManager)\n"
        "[2026-11-27 18:19:31,000] INFO something else the checker does not read\n")
    (source / "logs" / "clients.log").write_text("[2026-11-27 18:19:30,123] client chatter\n")
    meta = json.loads((source / "meta.json").read_text())
    span = meta["end_ns"] - meta["start_ns"] + 1_000_000_000
    tiled = tile_run(source, tmp_path / "tiled", 6_000)
    events = fencing_events(tiled)
    assert [(e.broker, e.event) for e in events] == [(2, "fenced")] * 3
    assert [e.t_ns - events[0].t_ns for e in events] == [k * (span // 1_000_000) * 1_000_000 for k in range(3)]
    assert not (tiled / "logs" / "clients.log").exists()
