"""commit_backwards' two order excuses hold only in their window (issue 48): a member's own auto commits completing
out of order, not once another member was assigned the partition at another offset (the lower commit would then
have been processed under it: ClassicGroup/ConsumerGroup.validateOffsetCommit fence the old generation); and a
commit stored before the next owner's assignment, not once a later owner is assigned the lower offset after the
higher commit's answer (the committed offset then did go back: OffsetMetadataManager.commitOffset overwrites,
fetchOffsets returns the stored offset)."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_chaos.history.schema import GROUP_SCHEMA
from tests.checkers.conftest import read, send, write_run
from tests.checkers.test_group_checks import checked, event, group_run, late_answer


def own_reorder_run(tmp_path, name, other_assigned_with=None, at_ms=650):
    """c0 (auto commit) reads 0..9, commits 7 and 9; 9 is answered at 600 ms, 7 at 700 ms. Optionally c1 is assigned
    the partition at `at_ms` with `other_assigned_with` committed (c0's revocation not journaled: it was cut off)."""
    sends = [send(f"v{i}", offset=i, t=i) for i in range(10)]
    reads = [read(f"v{o}", offset=o, consumer="c0", t=100 + o) for o in range(10)]
    reads += [read(f"v{i}", offset=i, t=9000) for i in range(10)]
    events = [event("c0", 0, "assigned"), event("c0", 600, "commit", offset=9), event("c0", 700, "commit", offset=7)]
    if other_assigned_with is not None:
        events.append(event("c1", at_ms, "assigned", offset=other_assigned_with))
    run = write_run(tmp_path / name, sends, reads, consumer_mode="subscribe", consumer_commit="auto")
    pq.write_table(pa.Table.from_pylist(events, schema=GROUP_SCHEMA), run / "history/group.parquet")
    return run


def backwards(run):
    _, _, rows = checked(run)
    return [r["classification"] for r in rows if r["kind"] == "commit_backwards"]


def test_a_members_own_auto_commits_completing_out_of_order_are_allowed(tmp_path):
    assert backwards(own_reorder_run(tmp_path, "own")) == ["allowed"]


@pytest.mark.parametrize("assigned_with, at_ms, expected", [
    (9, 650, "violation"),      # another owner started at 9 before the lower commit's answer: 7 was stored after
    (7, 650, "allowed"),        # it started at 7: the lower commit had been stored before it
    (9, 701, "allowed"),        # assigned after the lower commit's answer: out of this excuse's window
])
def test_the_own_reorder_excuse_ends_when_another_member_is_assigned_the_partition_at_another_offset(
        tmp_path, assigned_with, at_ms, expected):
    assert backwards(own_reorder_run(tmp_path, f"o{assigned_with}-{at_ms}", assigned_with, at_ms)) == [expected]


def test_a_commit_stored_before_the_assignment_is_not_excused_once_a_later_owner_gets_the_lower_offset(tmp_path):
    live, events = late_answer()
    # c2 is assigned the partition after c1's commit of 10 was answered (1600 ms), with c0's lower 7 committed
    run = group_run(tmp_path, "back", live, events + [event("c1", 1800, "revoked"),
                                                       event("c2", 1900, "assigned", offset=7)])
    assert backwards(run) == ["violation"]
    # the control: the same history without that later assignment stays allowed
    assert backwards(group_run(tmp_path, "ok", *late_answer())) == ["allowed"]


# -- the ablation contract of tests/checkers/test_excuse_ablation.py ---------------------------------------------
def own_reorder_ablation(tmp_path, move):
    run = own_reorder_run(tmp_path, move.replace(" ", "-"), 9 if move == "another owner" else None)
    _, _, rows = checked(run)
    found = [r for r in rows if r["kind"] == "commit_backwards"]
    return [r["classification"] for r in found], [r["excuse"] for r in found], [r["reason"] for r in found]


def stored_first_ablation(tmp_path, move):
    live, events = late_answer()
    if move == "lower offset assigned later":
        events = events + [event("c1", 1800, "revoked"), event("c2", 1900, "assigned", offset=7)]
    _, _, rows = checked(group_run(tmp_path, move.replace(" ", "-"), live, events))
    found = [r for r in rows if r["kind"] == "commit_backwards"]
    return [r["classification"] for r in found], [r["excuse"] for r in found], [r["reason"] for r in found]
