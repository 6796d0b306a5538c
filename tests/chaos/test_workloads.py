"""The workloads beyond one librdkafka producer, on real brokers: the Java client side by side with librdkafka, and
a consumer group that commits and rebalances while a leader is killed. Short runs: each adds about two minutes."""
import json

import pyarrow.parquet as pq
import pytest

from tests.schemas import validate_run

pytestmark = [pytest.mark.chaos, pytest.mark.chaos_quick]
DURATION_S = 20


def test_both_clients_write_side_by_side_through_a_leader_isolation(chaos_run, chaos_cluster):
    result = chaos_run("leader-isolate", acks="1", min_isr=2, client="both", duration_s=DURATION_S, seed=11,
                       engine="pandas")
    verdict, meta = result.verdict, json.loads((result.run_dir / "meta.json").read_text())
    validate_run(result.run_dir)
    assert result.exit_code == 0, f"violations {verdict['violations']} in {result.run_dir}"
    assert meta["clients"]["java"]["version"] == chaos_cluster.version
    assert meta["clients"]["librdkafka"]["library"] == "librdkafka"
    assert {p["name"]: p["client"] for p in meta["producers"]} == {"p0": "librdkafka", "j0": "java"}
    clients = verdict["clients"]
    assert set(clients) == {"librdkafka", "java"}
    for name, c in clients.items():
        assert c["acked"] > 0, f"{name} acked nothing in {result.run_dir}"
    assert sum(c["lost"] for c in clients.values()) == verdict["anomalies"]["lost"]
    consumers = set(pq.read_table(result.run_dir / "history/reads.parquet", columns=["consumer"])
                    .column("consumer").to_pylist())
    assert {"c0", "jc0", "final"} <= consumers            # the Java live consumer journaled its reads too


def test_a_consumer_group_commits_and_rebalances_through_a_leader_kill(chaos_run):
    result = chaos_run("leader-kill", acks="all", min_isr=2, consumer_mode="subscribe", commit="manual",
                       consumers=3, duration_s=DURATION_S, seed=12, engine="pandas")
    verdict = result.verdict
    validate_run(result.run_dir)
    assert result.exit_code == 0, f"violations {verdict['violations']} in {result.run_dir}"
    group = pq.read_table(result.run_dir / "history/group.parquet").to_pandas()
    ok_commits = group[(group["event"] == "commit") & group["error"].isna()]
    assert len(ok_commits) > 0 and set(group["consumer"]) == {"c0", "c1", "c2"}
    assigned = group[group["event"] == "assigned"]
    assert assigned.groupby("partition").size().min() >= 2, "the group never rebalanced a partition"
    assert verdict["anomalies"]["group_skip"] == verdict["anomalies"]["commit_backwards"] == 0
