"""A group member killed with auto commit (checkers/groups.py `group_skip`): which skipped records its kill excuses.

librdkafka stores the offset of each record as it hands it to the application (`enable.auto.offset.store`,
"automatically store offset of last message provided to application") and commits the stored offsets from a
background thread (`enable.auto.commit`; CONFIGURATION.md), while our member journals what it was handed into a
buffer written every flush. So the records a killed member was handed after its last flush may be committed and
never journaled: at most once for a crashed application, which auto commit allows. A dead or revoked member is
handed nothing more, and a commit covers only what was handed before it was sent: so the excuse holds only for a
record first sent no later than the member's kill, its revocation and its covering commit's answer, whichever came
first. The cause is the consumer_kill fault row (`f<row>` of history/faults.parquet, at its time).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from kafka_chaos.checkers.excuses import Cause, Claim, Times, claim, rule

FAULTS_FILE = "history/faults.parquet"
# How long a group member's loop may leave a record it was handed unwritten when it runs normally: it writes its
# reads every flush interval (0.25 s, workloads/group_consumer.py and JavaGroupConsumer.java) between polls of at
# most 0.1 s; 0.15 s more for the loop's own work. A member killed later than this after its own commit covering a
# record had written what it was handed before that commit.
UNFLUSHED_NS = 500_000_000


@dataclass(frozen=True)
class HandOverTimes(Times):
    """A skipped record's times (`sent`: its first send) and the killed member's last chances to be handed it:
    its revocation of the partition (`revoked`) and its covering commit's answer (`answered`), where known."""

    revoked: int | None = None


def _handed_before(cause: Cause, t: HandOverTimes) -> bool:
    """The record was first sent no later than the kill, the revocation and the covering commit's answer."""
    bounds = [b for b in (cause.t_ns, t.revoked, t.answered) if b is not None]
    return t.sent is not None and t.sent <= min(bounds)


KILLED_HOLDER = rule(
    "group_skip.killed_holder", ("group_skip",),
    "auto commit commits the offsets librdkafka stored as it handed records over (enable.auto.offset.store), "
    "journaled or not, so a killed member's last records are delivered at most once (librdkafka CONFIGURATION.md); "
    "a dead or revoked member is handed nothing more",
    "the record was first sent no later than the member's kill, its revocation of the partition and the answer of "
    "its commit covering the record, whichever came first",
    _handed_before)


def killed_holder(r, group: pd.DataFrame, live: pd.DataFrame,
                  kills: pd.DataFrame) -> tuple[str, Claim] | None:
    """The kill that may have taken skipped record `r` (auto commit; r["t_sent_ns"]: its first send, NaN unknown)
    with the killed member's unflushed journal: (what happened, KILLED_HOLDER's claim), or None."""
    p, off = int(r["partition"]), int(r["offset"])
    sent = int(r["t_sent_ns"]) if "t_sent_ns" in r and pd.notna(r["t_sent_ns"]) else None
    mine = group[(group["partition"] == p) & group["event"].isin(("assigned", "revoked"))].sort_values(
        "t_ns", kind="stable")
    for k in kills.itertuples(index=False):
        held = _held(k, p, off, group, mine, live)
        if held is None:
            continue
        since, start, held_until, late, unflushed = held
        got = live[(live["consumer"] == k.consumer) & (live["partition"] == p) & (live["t_ns"] >= since)]
        low = int(got["offset"].max()) if len(got) else (int(start) - 1 if pd.notna(start) else -1)
        after = mine[(mine["event"] == "assigned") & (mine["t_ns"] > held_until)]     # the next owner, first
        if after.empty or pd.isna(after["offset"].iloc[0]) or not low < off < int(after["offset"].iloc[0]):
            continue                                   # (its starting offset unknown: nothing can be excused)
        what = (f"consumer {k.consumer} was {_how(k, p, held_until, late, unflushed)}, having journaled it up to "
                f"offset {low}; the next owner started at the committed offset {int(after['offset'].iloc[0])}")
        revoked = None if held_until == k.t_ns else held_until
        answered = unflushed if unflushed is not None and not late else None
        found = claim(KILLED_HOLDER, Cause(f"f{int(k.row)}", int(k.t_ns), what),
                      HandOverTimes(sent=sent, revoked=revoked, answered=answered))
        if found is not None:
            return what, found
    return None


def _held(k, p: int, off: int, group: pd.DataFrame, mine: pd.DataFrame, live: pd.DataFrame):
    """How killed member `k` held partition `p` last: (assigned at, start offset, held until, its covering commit
    answered after the revocation, its own commit answered just before), or None if the kill cannot have taken
    record `off` of it."""
    before = mine[(mine["consumer"] == k.consumer) & (mine["t_ns"] <= k.t_ns)]
    if before.empty:
        return None
    held_until, late, unflushed = k.t_ns, False, None
    if before["event"].iloc[-1] != "assigned":
        # revoked before the kill: still its records if its own commit of p, after the revocation and before
        # the kill, covered them (librdkafka commits the stored offsets on revoke, and the answer may come a
        # second later: seen on 2026-11-27, c0 revoked from partition 1 at 5.22 s, its commit of 19795 at
        # 6.24 s, killed at 6.36 s, having journaled up to 19294), or if its own commit answered while it held p
        # came just before the kill (_unflushed_commit)
        held_until = int(before["t_ns"].iloc[-1])
        own = group[(group["consumer"] == k.consumer) & (group["partition"] == p) & (group["event"] == "commit")
                    & (group["t_ns"] <= k.t_ns) & group["error"].isna() & (group["offset"] > off)]
        late = bool((own["t_ns"] > held_until).any())
        before = before[before["t_ns"] < held_until]
        if before.empty or before["event"].iloc[-1] != "assigned":
            return None
        unflushed = _unflushed_commit(own, live, k, int(before["t_ns"].iloc[-1]), held_until)
        if not late and unflushed is None and not _lost_commit(group, mine, p, held_until, off):
            return None                                # the killed member neither held nor committed p then
    return int(before["t_ns"].iloc[-1]), before["offset"].iloc[-1], held_until, late, unflushed


def _how(k, p: int, held_until: int, late: bool, unflushed: int | None) -> str:
    if held_until == k.t_ns:
        return f"killed holding partition {p}"
    if unflushed is not None and not late:
        return (f"killed {(k.t_ns - unflushed) / 1e9:.2f} s after its own auto commit covering the record, "
                f"answered while it held partition {p}, with nothing journaled since (a member writes what it was "
                f"handed within {UNFLUSHED_NS / 1e9:.1f} s)")
    return (f"killed {(k.t_ns - held_until) / 1e9:.2f} s after partition {p} was revoked from it (its commit "
            "on revoke covering the records" + ("" if late else ", answered after the kill") + ")")


def _unflushed_commit(own: pd.DataFrame, live: pd.DataFrame, k, since: int, revoked: int) -> int | None:
    """The time of the killed member's own successful commit covering the record, answered while it held the
    partition (`since` to its revocation), at most UNFLUSHED_NS before the kill and with no read journaled by that
    member after it: what it was handed before that commit may still have been in its journal's buffer. A real run
    (2026-11-29, consumer-and-leader-kill, auto, seed 16): c0 journaled partition 2 up to 5631, its timer's auto
    commit of 5683 was answered at -0.273 s, the rebalance revoked the partition 19 us later and the kill came at
    0.000 s; the next owner started at 5683. Else None."""
    during = own[(own["t_ns"] >= since) & (own["t_ns"] <= revoked) & (own["t_ns"] >= k.t_ns - UNFLUSHED_NS)]
    if during.empty:
        return None
    at = int(during["t_ns"].max())
    if ((live["consumer"] == k.consumer) & (live["t_ns"] > at) & (live["t_ns"] <= k.t_ns)).any():
        return None         # it wrote its journal after that commit, and with it every record handed over before
    return at


def _lost_commit(group: pd.DataFrame, mine: pd.DataFrame, p: int, revoked: int, off: int) -> bool:
    """Whether the owner of partition `p` after a revocation at `revoked` started at a committed offset above `off`
    and above every successful commit of p journaled before it: a commit the history lacks. Every member journals
    its commits' outcomes, so only a killed member's journal can lack one, and the partition's last holder was the
    killed member: its commit of the offsets it stored, on revoke, answered after the kill. A real run (2026-11-28,
    consumer-and-leader-kill, auto): c0 journaled partition 1 up to 6393 and committed 5699, was revoked at 6.11 s
    and killed at 6.40 s; its replacement was assigned the partition at 17.06 s with the committed offset 6428."""
    nxt = mine[(mine["event"] == "assigned") & (mine["t_ns"] > revoked)]
    if nxt.empty or pd.isna(nxt["offset"].iloc[0]):
        return False
    start, assigned = int(nxt["offset"].iloc[0]), int(nxt["t_ns"].iloc[0])
    journaled = group[(group["partition"] == p) & (group["event"] == "commit") & group["error"].isna()
                      & (group["t_ns"] < assigned)]
    return start > off and (journaled.empty or start > int(journaled["offset"].max()))


def read_kills(run_dir: Path | str) -> pd.DataFrame:
    """The consumer_kill fault starts of a run (consumer, t_ns, row: the fault's row in faults.parquet, its id)."""
    path = Path(run_dir) / FAULTS_FILE
    rows = []
    if path.exists():
        faults = pd.read_parquet(path, columns=["t_ns", "action", "details"])
        for row, f in enumerate(faults.itertuples(index=False)):
            d = json.loads(f.details) if f.details else {}
            if f.action == "start" and d.get("effect") == "consumer_kill":
                rows.append({"consumer": d.get("consumer"), "t_ns": int(f.t_ns), "row": row})
    return pd.DataFrame(rows, columns=["consumer", "t_ns", "row"])
