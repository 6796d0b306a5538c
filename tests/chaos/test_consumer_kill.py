"""A consumer-group member killed (kill -9) and replaced while a leader is killed, on real brokers: the fault acts
on the run's own consumer processes, the group rebalances the dead member's partitions and takes in its
replacement, and the group checks judge what happened across the kill. One short run (about two minutes).

Why 38 s and not less: the killed member leaves no LeaveGroup, so the group drops it only when its session
(10 s) expires, about 16 s in. But when the group's coordinator is the leader of chaos/0 killed at 9 s, the
coordinator moves once that broker is fenced (~15 s), and the new one starts every loaded member's session anew
(GroupMetadataManager.onLoaded, classic groups: rescheduleClassicGroupMemberHeartbeat per member): the victim's
partitions then move only about 27 s in. A 25 s run missed that (CI, 2026-11-23).
"""
import json

import pyarrow.parquet as pq
import pytest

from tests.schemas import validate_run

pytestmark = [pytest.mark.chaos, pytest.mark.chaos_quick]


def test_a_killed_group_member_is_replaced_and_its_partitions_move(chaos_run):
    result = chaos_run("consumer-and-leader-kill", acks="all", min_isr=2, consumer_mode="subscribe", commit="auto",
                       consumers=3, duration_s=38, seed=16, engine="pandas")
    verdict, run = result.verdict, result.run_dir
    validate_run(run)
    assert result.exit_code == 0, f"violations {verdict['violations']} in {run}"
    faults = pq.read_table(run / "history/faults.parquet").to_pandas()
    kill = faults[faults["fault"] == "consumer-kill"]
    assert list(kill["action"]) == ["start", "heal"], f"consumer-kill did not start and heal in {run}"
    details = json.loads(kill["details"].iloc[0])
    victim, replacement, killed_by = details["consumer"], details["replacement"], details["applied_ns"]
    assert replacement == f"{victim}-r1" and details["pid"] > 0

    group = pq.read_table(run / "history/group.parquet").to_pandas()
    reads = pq.read_table(run / "history/reads.parquet", columns=["consumer", "t_ns"]).to_pandas()
    assert not len(group[(group["consumer"] == victim) & (group["t_ns"] > killed_by)]), "the victim lived on"
    assert not len(reads[(reads["consumer"] == victim) & (reads["t_ns"] > killed_by)])
    mine = group[(group["consumer"] == victim) & group["event"].isin(["assigned", "revoked"])
                 & (group["t_ns"] <= killed_by)].sort_values("t_ns")
    held = {p for p, ev in mine.groupby("partition")["event"].last().items() if ev == "assigned"}
    later = group[(group["event"] == "assigned") & (group["t_ns"] > killed_by)]
    assert held <= set(later["partition"]), f"partitions {held} of the killed {victim} never moved in {run}"
    assert len(later[later["consumer"] == replacement]), f"the replacement {replacement} got no partition in {run}"
    assert verdict["anomalies"]["reread_below_commit"] == 0
    # A member's own auto commits may complete out of order when the leader kill takes the group coordinator with
    # them in flight (docs/history.md; seen in a fresh-clone suite run, 2026-11-26 18:08, seed 16: 9485 five times after
    # 9533): allowed for the same member with the partition assigned throughout, and for nothing else.
    judged = pq.read_table(run / "anomalies.parquet").to_pandas()
    backwards = judged[judged["kind"] == "commit_backwards"]
    assert (backwards["classification"] == "allowed").all(), backwards["reason"].tolist()
    assert backwards["reason"].str.contains("after its own commit of .* assigned to it throughout").all(), \
        backwards["reason"].tolist()
