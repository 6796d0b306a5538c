"""A subscribe-mode poll_skip is allowed only by the consumer's own reassignment of the partition at a committed
offset past what it skipped, between its read of the step's start and its landing read (poll_skip.reassigned_past,
naming the assignment); the same skip with no such assignment is a violation, as in assign mode."""
import pyarrow as pa
import pyarrow.parquet as pq

from tests.checkers.conftest import MS, T, read, send, write_run
from tests.checkers.test_group_checks import checked, event


def skip_run(tmp_path, name, events, journal=True):
    """c0 reads offsets 0..2 at 100-102 ms and lands on 7 at 3000 ms; c1 read 3..6 at 2000-2003 ms."""
    from kafka_chaos.history.schema import GROUP_SCHEMA
    sends = [send(f"v{i}", offset=i, t=i) for i in range(10)]
    reads = [read(f"v{o}", offset=o, consumer="c0", t=100 + o) for o in range(3)]
    reads += [read(f"v{o}", offset=o, consumer="c1", t=2000 + o) for o in range(3, 7)]
    reads += [read(f"v{o}", offset=o, consumer="c0", t=3000 + o) for o in range(7, 10)]
    reads += [read(f"v{i}", offset=i, t=9000) for i in range(10)]
    run = write_run(tmp_path / name, sends, reads, consumer_mode="subscribe", consumer_commit="manual")
    if journal:
        pq.write_table(pa.Table.from_pylist(events, schema=GROUP_SCHEMA), run / "history/group.parquet")
    return run


def skips(run) -> list[dict]:
    _, _, rows = checked(run)
    return [r for r in rows if r["kind"] == "poll_skip"]


HANDOVER = [event("c0", 0, "assigned", offset=0), event("c0", 1000, "revoked"), event("c1", 1500, "assigned",
            offset=3), event("c1", 2500, "commit", offset=7), event("c1", 2600, "revoked")]


def reassigned(t_ms=2800, offset=7, error=None):
    return HANDOVER + [event("c0", t_ms, "assigned", offset=offset, error=error)]


def test_a_reassignment_at_the_other_members_commit_allows_the_skip_and_names_itself(tmp_path):
    [row] = skips(skip_run(tmp_path, "ok", reassigned()))
    assert row["classification"] == "allowed" and row["excuse"] == "poll_skip.reassigned_past"
    assert row["cause_id"] == f"assigned c0 p0 {T + 2800 * MS}" and row["cause_t_ns"] == T + 2800 * MS
    assert "committed offset 7" in row["reason"]


def test_the_landing_read_is_the_assignments_last_moment(tmp_path):
    assert skips(skip_run(tmp_path, "at", reassigned(t_ms=3007)))[0]["classification"] == "allowed"
    assert skips(skip_run(tmp_path, "after", reassigned(t_ms=3008)))[0]["classification"] == "violation"


def test_an_assignment_before_the_steps_start_read_explains_nothing(tmp_path):
    [row] = skips(skip_run(tmp_path, "early", HANDOVER[:1] + [event("c0", 50, "assigned", offset=7)]))
    assert row["classification"] == "violation" and row["excuse"] is None


def test_the_committed_offset_must_lie_past_the_skipped_records_and_not_past_the_landing(tmp_path):
    assert skips(skip_run(tmp_path, "low", reassigned(offset=1)))[0]["classification"] == "violation"
    assert skips(skip_run(tmp_path, "next", reassigned(offset=3)))[0]["classification"] == "violation"
    assert skips(skip_run(tmp_path, "above", reassigned(offset=8)))[0]["classification"] == "violation"
    assert skips(skip_run(tmp_path, "high", reassigned(offset=4)))[0]["classification"] == "allowed"


def test_an_offset_the_journal_could_not_fetch_may_be_the_cause_but_no_commit_yet_is_not(tmp_path):
    unknown = skips(skip_run(tmp_path, "unknown", reassigned(offset=None, error="_TIMED_OUT")))[0]
    assert unknown["classification"] == "allowed" and "could not fetch" in unknown["reason"]
    none_yet = skips(skip_run(tmp_path, "none", reassigned(offset=None)))[0]
    assert none_yet["classification"] == "violation"     # auto.offset.reset=earliest starts at the log start


def test_no_assignment_of_this_consumer_makes_it_a_violation(tmp_path):
    [row] = skips(skip_run(tmp_path, "none", HANDOVER))
    assert row["classification"] == "violation" and "no assignment" in row["reason"]


def test_a_run_from_before_the_group_journal_is_judged_as_it_was(tmp_path):
    [row] = skips(skip_run(tmp_path, "old", [], journal=False))
    assert row["classification"] == "allowed" and row["excuse"] is None and "group.parquet" in row["reason"]


def reassigned_ablation(tmp_path, move):
    """For the excuse ablation: the reassignment at 2800 ms, or moved after the landing read."""
    run = skip_run(tmp_path, move.replace(" ", "_"), reassigned(t_ms=3500 if move == "cause later" else 2800))
    found = skips(run)
    return [r["classification"] for r in found], [r["excuse"] for r in found], [r["reason"] for r in found]
