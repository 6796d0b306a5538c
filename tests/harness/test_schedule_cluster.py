"""On real brokers (one short run): a plan given as a file is what the run plays and records, and the topic's
replica layout is the one drawn from the seed (the first leaders are the preferred ones)."""
import json

import pyarrow.parquet as pq
import pytest

from kafka_chaos.harness.runner import seeded_assignment
from kafka_chaos.nemesis import schedule_data
from kafka_chaos.nemesis.schedule import Step, spec

pytestmark = [pytest.mark.cluster]


def test_a_schedule_file_is_played_and_recorded(chaos_run, tmp_path):
    steps = [Step(4.0, spec("follower-kill", topic="chaos"), 9.0, 77)]
    plan = schedule_data.write(tmp_path / "plan.json", steps, "leader-kill", 21, 15)
    result = chaos_run("leader-kill", schedule_file=plan, seed=21, acks="all", min_isr=2, engine="pandas")
    run_dir = result.run_dir
    assert result.verdict is not None and result.exit_code == 0
    assert list(schedule_data.read(run_dir / "schedule.json").steps) == steps
    meta = json.loads((run_dir / "meta.json").read_text())
    assert f"--schedule {plan}" in meta["command"] and meta["duration_s"] == 15
    assert meta["replica_assignment"] == seeded_assignment(21, meta["brokers"], 3, 3)
    faults = pq.read_table(run_dir / "history" / "faults.parquet").to_pandas()
    assert list(faults["fault"]) == ["follower-kill", "follower-kill"]
    assert set(faults["nodes"].iloc[0]) <= set(meta["replica_assignment"][0][1:])      # a follower of chaos/0
    first = pq.read_table(run_dir / "history" / "cluster.parquet").to_pandas().sort_values("t_ns")
    leaders = first.groupby("partition")["leader"].first().to_dict()
    assert leaders == {p: r[0] for p, r in enumerate(meta["replica_assignment"])}
