"""The group checks across a killed member (consumer-kill) on synthetic histories: what a consumer killed with
SIGKILL may take with it depends on the commit mode. Auto commit commits what librdkafka handed over, journaled or
not, so the records the killed member received after its last journal flush may be skipped for good (allowed);
manual commit commits only what was journaled, so the same skip is a violation."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_chaos.history.schema import GROUP_SCHEMA
from tests.checkers.conftest import MS, T, fault, read, send, write_run
from tests.checkers.test_group_checks import checked, event

KILL_MS = 1000


def killed_run(tmp_path, name, commit, c0_reads=(0, 1, 2, 3, 4), kill=True, c0_revoked_first=False, next_offset=7,
               c0_late_commit=None, between=None, c0_early_commit=None, early_ms=400, revoked_ms=500,
               c0_reads_p1_at=None, sent_ms=None):
    """p0 holds v0..v9. c0 holds p0 and journals `c0_reads`; it is killed at 1 s (its auto commit had covered
    7); after its session expired, c1 is assigned p0 with committed offset 7 and reads 7..9. p1 holds w0, which c0
    reads at `c0_reads_p1_at` ms if given. v<i> is sent at i ms, or at `sent_ms[i]`."""
    sends = [send(f"v{i}", offset=i, t=(sent_ms or {}).get(i, i)) for i in range(10)]
    sends.append(send("w0", partition=1, offset=0, t=10))
    live = [("c0", o, 100 + o) for o in c0_reads] + [("c1", o, 12000 + o) for o in (7, 8, 9)]
    reads = [read(f"v{o}", offset=o, consumer=c, t=t) for c, o, t in live]
    if c0_reads_p1_at is not None:
        reads.append(read("w0", partition=1, offset=0, consumer="c0", t=c0_reads_p1_at))
    reads += [read(f"v{i}", offset=i, t=20000) for i in range(10)] + [read("w0", partition=1, offset=0, t=20000)]
    faults = [fault(KILL_MS, "start", "consumer_kill", [], "consumer-kill", consumer="c0", pid=4242,
                    replacement="c0-r1", applied_ns=0),
              fault(KILL_MS + 9000, "heal", "consumer_kill", [], "consumer-kill", consumer="c0", pid=4242,
                    replacement="c0-r1")] if kill else []
    events = [event("c0", 0, "assigned", offset=None)]
    if c0_early_commit is not None:             # c0's own commit of p0, journaled while it held it
        events.append(event("c0", early_ms, "commit", offset=c0_early_commit))
    if c0_revoked_first:
        events.append(event("c0", revoked_ms, "revoked"))
    if c0_late_commit is not None:              # c0's own commit of p0 completing after its revocation
        events.append(event("c0", 800, "commit", offset=c0_late_commit))
    if between is not None:                     # c2 holds p0 after c0's revocation: (start offset, its commit)
        events += [event("c2", 850, "assigned", offset=between[0]), event("c2", 900, "commit", offset=between[1])]
    events += [event("c1", 11000, "assigned", offset=next_offset), event("c1", 13000, "commit", offset=10),
               event("c0-r1", 10500, "assigned", partition=1, offset=None)]
    run = write_run(tmp_path / name, sends, reads, faults=faults, consumer_mode="subscribe", consumer_commit=commit)
    pq.write_table(pa.Table.from_pylist(events, schema=GROUP_SCHEMA), run / "history/group.parquet")
    return run


def skips(rows):
    return {r["offset"]: r for r in rows if r["kind"] == "group_skip"}


def test_auto_commit_may_skip_what_a_killed_member_received_but_never_journaled(tmp_path):
    code, verdict, rows = checked(killed_run(tmp_path, "auto", "auto"))
    assert code == 0 and verdict["valid"], verdict["violations"]
    found = skips(rows)
    assert sorted(found) == [5, 6] and {r["classification"] for r in found.values()} == {"allowed"}
    assert "c0 was killed holding partition 0" in found[5]["reason"] and "up to offset 4" in found[5]["reason"]
    assert "committed offset 7" in found[5]["reason"]


def test_manual_commit_across_a_kill_still_must_not_skip(tmp_path):
    code, verdict, rows = checked(killed_run(tmp_path, "manual", "manual"))
    assert code == 1 and verdict["violations"] == {"group_skip": 2}
    assert {r["classification"] for r in skips(rows).values()} == {"violation"}


def test_without_a_kill_an_auto_commit_skip_is_a_violation(tmp_path):
    code, verdict, _ = checked(killed_run(tmp_path, "no-kill", "auto", kill=False))
    assert code == 1 and verdict["violations"] == {"group_skip": 2}


def test_a_kill_excuses_nothing_below_what_the_killed_member_journaled(tmp_path):
    # c0 journaled 0, 1, 3, 4: offset 2 was skipped inside what it had read, not lost with its buffer; its own step
    # from 1 to 3 is a poll_skip no reassignment explains (judge/poll_skips.py)
    code, verdict, rows = checked(killed_run(tmp_path, "hole", "auto", c0_reads=(0, 1, 3, 4)))
    found = skips(rows)
    assert code == 1 and verdict["violations"] == {"group_skip": 1, "poll_skip": 1}
    assert found[2]["classification"] == "violation"
    assert found[5]["classification"] == found[6]["classification"] == "allowed"


def test_a_killed_members_commit_answered_after_the_kill_covers_what_it_never_journaled(tmp_path):
    # revoked, then killed before its commit's answer was journaled: the next owner starts at an offset no journaled
    # commit reached, which only the killed last holder can have committed (a real run, groups._lost_commit)
    code, verdict, rows = checked(killed_run(tmp_path, "revoked", "auto", c0_revoked_first=True))
    assert code == 0 and verdict["valid"], verdict["violations"]
    assert {r["classification"] for r in skips(rows).values()} == {"allowed"}


def test_a_kill_excuses_nothing_another_member_held_after_the_killed_one(tmp_path):
    # c2 took p0 after c0's revocation at offset 5, read nothing and committed 7: the skip is c2's, not the kill's
    code, verdict, _ = checked(killed_run(tmp_path, "held", "auto", c0_revoked_first=True, between=(5, 7)))
    assert code == 1 and verdict["violations"] == {"group_skip": 2}


def test_a_kill_excuses_nothing_when_a_journaled_commit_explains_the_next_owners_start(tmp_path):
    # c0 committed 7 while it held p0, journaled, and lived on for 0.6 s without journaling 5 and 6: no lost commit
    code, verdict, _ = checked(killed_run(tmp_path, "explained", "auto", c0_revoked_first=True, c0_early_commit=7))
    assert code == 1 and verdict["violations"] == {"group_skip": 2}
    code, verdict, _ = checked(killed_run(tmp_path, "explained-low", "auto", c0_revoked_first=True,
                                          between=(6, 7)))
    assert code == 1 and verdict["violations"] == {"group_skip": 1}        # 5 is c0's (lost commit), 6 is c2's


def test_a_member_killed_right_after_its_own_auto_commit_and_a_revocation_may_skip_what_it_never_journaled(tmp_path):
    # a real run (2026-11-29, seed 16): c0's timer commit of 5683 answered, the rebalance revoked the partition 19 us
    # later and the kill came 0.27 s after the commit; c0 had journaled up to 5631 and the next owner started at 5683
    run = killed_run(tmp_path, "just-before", "auto", c0_revoked_first=True, c0_early_commit=7, early_ms=700,
                     revoked_ms=701)
    code, verdict, rows = checked(run)
    assert code == 0 and verdict["valid"], verdict["violations"]
    found = skips(rows)
    assert sorted(found) == [5, 6] and {r["classification"] for r in found.values()} == {"allowed"}
    assert "killed 0.30 s after its own auto commit covering the record" in found[5]["reason"]


def test_an_own_commit_excuses_a_skip_only_within_the_journal_s_flush_window_before_the_kill(tmp_path):
    # 0.5 s (groups.UNFLUSHED_NS) before the kill: the member may not yet have written what it was handed
    code, verdict, _ = checked(killed_run(tmp_path, "edge", "auto", c0_revoked_first=True, c0_early_commit=7,
                                          early_ms=500, revoked_ms=501))
    assert code == 0 and verdict["valid"], verdict["violations"]
    # 0.51 s before it: its loop had written its journal since, with every record handed over before the commit
    code, verdict, _ = checked(killed_run(tmp_path, "past", "auto", c0_revoked_first=True, c0_early_commit=7,
                                          early_ms=490, revoked_ms=501))
    assert code == 1 and verdict["violations"] == {"group_skip": 2}


def test_an_own_commit_excuses_nothing_once_the_member_journaled_a_read_after_it(tmp_path):
    # c0 journaled a read of partition 1 after its commit: that write took every earlier line with it, so 5 and 6
    # were never handed over to it
    code, verdict, _ = checked(killed_run(tmp_path, "wrote", "auto", c0_revoked_first=True, c0_early_commit=7,
                                          early_ms=700, revoked_ms=701, c0_reads_p1_at=800))
    assert code == 1 and verdict["violations"] == {"group_skip": 2}


def test_an_own_commit_excuses_only_the_records_below_it(tmp_path):
    # c0's commit of 6 covers 5, not 6; c2, after it, started at 6 and committed 7 without reading 6
    code, verdict, rows = checked(killed_run(tmp_path, "low", "auto", c0_revoked_first=True, c0_early_commit=6,
                                             early_ms=700, revoked_ms=701, between=(6, 7)))
    found = skips(rows)
    assert code == 1 and verdict["violations"] == {"group_skip": 1}
    assert found[5]["classification"] == "allowed" and found[6]["classification"] == "violation"


def test_a_manual_member_killed_right_after_its_commit_still_must_not_skip(tmp_path):
    code, verdict, _ = checked(killed_run(tmp_path, "manual-just-before", "manual", c0_revoked_first=True,
                                          c0_early_commit=7, early_ms=700, revoked_ms=701))
    assert code == 1 and verdict["violations"] == {"group_skip": 2}


def test_a_killed_members_own_commit_completing_after_its_revocation_covers_what_it_never_journaled(tmp_path):
    # librdkafka commits the stored offsets on revoke and the answer may come later (a real run: c0 revoked at
    # 5.22 s, its commit at 6.24 s, killed at 6.36 s): what that commit covered went at most once
    code, verdict, rows = checked(killed_run(tmp_path, "late", "auto", c0_revoked_first=True, c0_late_commit=7))
    assert code == 0 and verdict["valid"], verdict["violations"]
    assert {r["classification"] for r in skips(rows).values()} == {"allowed"}


def test_a_late_commit_below_the_skipped_records_excuses_nothing(tmp_path):
    # c0's late commit of 6 covers 5, not 6; c2, after it, started at 6 and committed 7 without reading 6
    code, verdict, _ = checked(killed_run(tmp_path, "late-low", "auto", c0_revoked_first=True, c0_late_commit=6,
                                          between=(6, 7)))
    assert code == 1 and verdict["violations"] == {"group_skip": 1}


def test_a_kill_excuses_nothing_when_the_next_owners_starting_offset_is_unknown(tmp_path):
    # the next owner could not fetch the committed offset: the skipped range cannot be bounded, so it stays judged
    code, verdict, _ = checked(killed_run(tmp_path, "unknown", "auto", next_offset=None))
    assert code == 1 and verdict["violations"] == {"group_skip": 2}


def own_reorder_run(tmp_path, name, commit, revoke_between=False, other=False):
    """c0 holds p0 throughout, reads 0..9 and commits 8 then (outcome later) 6: its own commits out of order."""
    sends = [send(f"v{i}", offset=i, t=i) for i in range(10)]
    reads = [read(f"v{o}", offset=o, consumer="c0", t=100 + o) for o in range(10)]
    reads += [read(f"v{i}", offset=i, t=20000) for i in range(10)]
    events = [event("c0", 0, "assigned", offset=None), event("c0", 500, "commit", offset=8)]
    if revoke_between:
        events += [event("c0", 600, "revoked"), event("c0", 700, "assigned", offset=8)]
    events.append(event("c1" if other else "c0", 800, "commit", offset=6))
    run = write_run(tmp_path / name, sends, reads, consumer_mode="subscribe", consumer_commit=commit)
    pq.write_table(pa.Table.from_pylist(events, schema=GROUP_SCHEMA), run / "history/group.parquet")
    return run


def test_a_members_own_auto_commits_completing_out_of_order_are_allowed(tmp_path):
    code, verdict, rows = checked(own_reorder_run(tmp_path, "own-auto", "auto"))
    assert code == 0 and verdict["anomalies"]["commit_backwards"] == 1
    row = next(r for r in rows if r["kind"] == "commit_backwards")
    assert row["classification"] == "allowed" and "its own commit of 8" in row["reason"]
    # not with manual (synchronous) commits, not across a revocation, not another member's
    for name, kw in (("own-manual", {"commit": "manual"}), ("revoked", {"commit": "auto", "revoke_between": True}),
                     ("other", {"commit": "auto", "other": True})):
        code, verdict, _ = checked(own_reorder_run(tmp_path, name, **kw))
        assert code == 1 and verdict["violations"] == {"commit_backwards": 1}, name


# -- issue 48: a dead or revoked member is handed nothing more, so its commit covers only records sent before ------

def sent_at(ms: int) -> dict[int, int]:
    """The skipped records 5 and 6 sent at `ms`, the later ones 7..9 just after (sends stay in offset order)."""
    return {5: ms, 6: ms, 7: ms + 1, 8: ms + 2, 9: ms + 3}


def test_a_kill_excuse_names_the_consumer_kill_fault_row_and_its_time(tmp_path):
    _, _, rows = checked(killed_run(tmp_path, "named", "auto"))
    for r in skips(rows).values():
        assert (r["excuse"], r["cause_id"], r["cause_t_ns"]) == ("group_skip.killed_holder", "f0", T + KILL_MS * MS)
        assert "allowed by group_skip.killed_holder" in r["reason"]


@pytest.mark.parametrize("sent, expected", [(KILL_MS - 1, "allowed"), (KILL_MS, "allowed"),
                                            (KILL_MS + 1, "violation"), (KILL_MS + 500, "violation")])
def test_records_first_sent_after_the_kill_of_their_holder_are_not_its_to_lose(tmp_path, sent, expected):
    code, verdict, rows = checked(killed_run(tmp_path, f"sent-{sent}", "auto", sent_ms=sent_at(sent)))
    assert {r["classification"] for r in skips(rows).values()} == {expected}
    if expected == "violation":
        assert code == 1 and verdict["violations"] == {"group_skip": 2}
        assert all(r["excuse"] is None for r in skips(rows).values())


@pytest.mark.parametrize("sent, expected", [(500, "allowed"), (501, "violation"), (900, "violation")])
def test_records_first_sent_after_the_killed_members_revocation_are_not_its_to_lose(tmp_path, sent, expected):
    # revoked at 500 ms and killed at 1 s: its lost commit on revoke (answered after the kill) covers only what it
    # had been handed before the revocation
    run = killed_run(tmp_path, f"revoked-{sent}", "auto", c0_revoked_first=True, sent_ms=sent_at(sent))
    _, _, rows = checked(run)
    assert {r["classification"] for r in skips(rows).values()} == {expected}


@pytest.mark.parametrize("sent, expected", [(500, "allowed"), (501, "violation")])
def test_a_commit_on_revoke_answered_late_covers_only_records_sent_before_the_revocation(tmp_path, sent, expected):
    run = killed_run(tmp_path, f"late-{sent}", "auto", c0_revoked_first=True, c0_late_commit=7,
                     sent_ms=sent_at(sent))
    _, _, rows = checked(run)
    assert {r["classification"] for r in skips(rows).values()} == {expected}


@pytest.mark.parametrize("sent, expected", [(700, "allowed"), (701, "violation")])
def test_an_own_commit_just_before_the_kill_covers_only_records_sent_before_its_answer(tmp_path, sent, expected):
    # its commit of 7 answered at 700 ms, the revocation at 701 ms, the kill at 1 s
    run = killed_run(tmp_path, f"own-{sent}", "auto", c0_revoked_first=True, c0_early_commit=7, early_ms=700,
                     revoked_ms=701, sent_ms=sent_at(sent))
    _, _, rows = checked(run)
    assert {r["classification"] for r in skips(rows).values()} == {expected}


def killed_holder_ablation(tmp_path, move):
    """The ablation contract of test_excuse_ablation.py: c0 killed holding p0 at 1 s, the skipped records 5 and 6
    sent before; moved: the records sent 0.2 s after the kill, or the kill of another member."""
    sent = sent_at(KILL_MS + 200) if move == "write after the cause" else None
    run = killed_run(tmp_path, move.replace(" ", "-"), "auto", sent_ms=sent)
    if move == "another member":
        faults = pq.read_table(run / "history/faults.parquet").to_pandas()
        faults["details"] = faults["details"].str.replace('"consumer": "c0"', '"consumer": "c9"')
        pq.write_table(pa.Table.from_pandas(faults, preserve_index=False), run / "history/faults.parquet")
    _, _, rows = checked(run)
    found = list(skips(rows).values())
    return [r["classification"] for r in found], [r["excuse"] for r in found], [r["reason"] for r in found]
