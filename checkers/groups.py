"""Consumer groups (subscribe mode): what the group committed and read, against what Kafka promises a group.

Read from history/group.parquet (each consumer's assignments, with the group's committed offset at that moment,
revocations and commit outcomes) and the live and final reads. A small pandas pass: the group's rows are few, and
its reads are one per record. Four kinds (docs/history.md, "Consumer groups"):

- `commit_backwards` (per commit): a successful commit of a partition below an earlier successful one (by the time
  its outcome arrived). The group
  coordinator accepts a commit only from a member of the current generation (classic protocol: ILLEGAL_GENERATION
  or UNKNOWN_MEMBER_ID otherwise, GroupCoordinator / OffsetCommit; KIP-848's consumer protocol: STALE_MEMBER_EPOCH),
  and the current owner starts at the committed offset and commits only what it has read after it, so the committed
  offset of a partition never decreases. Allowed only where the model predicts an unclean election or power loss
  on the partition (a truncated log can put the committed offset out of range, and auto.offset.reset starts over).
  Also allowed with auto commit: a member's own commits completing out of order while it held the partition
  throughout. The coordinator validates a commit's member and generation and then replaces the stored offset
  whatever it was (group-coordinator OffsetMetadataManager.commitOffset / updateOffset): it fences stale members,
  not a current member's reordered commits, and librdkafka's background auto commits can complete out of order
  (seen when the coordinator's broker was killed with commits in flight). And allowed where the history shows the
  lower commit stored first: the member that made the higher commit was assigned the partition with the lower
  commit's offset as its committed offset, before the lower commit's answer arrived (`stored_before_assignment`:
  a commit on revoke whose answer reached its member after the rebalance; the committed offset a new owner
  fetches is the stored one, group-coordinator OffsetMetadataManager.fetchOffsets).
- `group_skip` (per record): a record in the final drain below the highest offset the group read in its partition
  that no consumer of the group ever read. Our consumers journal a record as they receive it, before anything
  commits it (manual: commit after the journal flush; auto: librdkafka stores an offset when it hands the record
  over, enable.auto.offset.store, and commits what is stored), which is Kafka's at-least-once (KafkaConsumer
  javadoc, "Offsets and Consumer Position"; librdkafka INTRODUCTION.md, "At-least-once processing"). So in both
  modes a skip is a violation, unless the model predicts an unclean election or power loss on the partition.
  One exception, a member's process killed (`consumer-kill`, faults.parquet effect `consumer_kill`) in auto mode:
  a record is journaled on receipt into a buffer written to disk every flush (a quarter second), while librdkafka
  stores its offset as it hands it over and commits the stored offsets from a background thread
  (CONFIGURATION.md: enable.auto.offset.store "automatically store offset of last message provided to
  application", enable.auto.commit "periodically commit offsets in the background"). Records the killed member
  received after its last flush can thus be committed and never journaled: for a crashed application that is
  at-most-once, which auto commit allows. A skip is allowed when the killed member held the partition at the
  kill (or had it revoked before, but its own commit of it completed after the revocation and before the kill,
  covering the record, or the next owner started at a committed offset above every commit the history holds: the
  killed member's commit, answered after the kill, or its own commit covering the record was answered while it
  held the partition, at most UNFLUSHED_NS before the kill, with no read journaled by it since), the record lies
  above everything it journaled of that partition since it was assigned it, and below the committed offset the
  partition's next owner started from.
  Manual mode commits only after the journal flush, so a skip across a kill stays a violation there.
- `reread_below_commit` (per read): a consumer read a record again below the offset the group had committed for
  that partition when the partition was assigned to it: a new owner starts at the committed offset (Kafka
  documentation, "Consumer position"), never before it. Same exception.
- `group_reread` (per read, never a violation): a record read again at or above that committed offset after a
  rebalance: at-least-once delivery, what Kafka promises without transactions.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.dataset as ds

from kafka_chaos.checkers.instances import rows_frame
from kafka_chaos.history import kinds

GROUP_FILE = "history/group.parquet"
FAULTS_FILE = "history/faults.parquet"
GROUP_KINDS = kinds.judged_by(kinds.GROUPS)       # declared in history/kinds.py
# How long a group member's loop may leave a record it was handed unwritten when it runs normally: it writes its
# reads every flush interval (0.25 s, workloads/group_consumer.py and JavaGroupConsumer.java) between polls of at
# most 0.1 s; 0.15 s more for the loop's own work. A member killed later than this after its own commit covering a
# record had written what it was handed before that commit.
UNFLUSHED_NS = 500_000_000


def destructive_cause(model, partition: int) -> str | None:
    """An unclean election or power loss the model predicts on the partition, if any (its reason)."""
    if model is None:
        return None
    for w in model.risk:
        if w.partition == partition and ("unclean" in w.reason or "power loss" in w.reason):
            return w.reason
    return None


def commits_backwards(group: pd.DataFrame) -> pd.DataFrame:
    """Successful commits below an earlier successful commit of the same partition (commit completion order)."""
    ok = group[(group["event"] == "commit") & group["error"].isna() & group["offset"].notna()]
    ok = ok.sort_values(["partition", "t_ns"], kind="stable").copy()
    ok["offset"] = ok["offset"].astype("int64")
    ok["before"] = ok.groupby("partition")["offset"].transform(lambda x: x.cummax().shift(1, fill_value=-1))
    # who made that higher commit, and when
    top = ok.sort_values(["partition", "t_ns"], kind="stable")
    holder, when, by = [], [], {}
    for p, c, o, t in zip(top["partition"], top["consumer"], top["offset"], top["t_ns"]):
        prev = by.get(p)
        holder.append(prev[0] if prev else None)
        when.append(prev[2] if prev else None)
        if prev is None or o > prev[1]:
            by[p] = (c, o, t)
    ok["before_by"], ok["before_t"] = holder, when
    return ok[ok["offset"] < ok["before"]].rename(columns={"t_ns": "t_commit"})


def stored_before_assignment(r, group: pd.DataFrame) -> int | None:
    """When the member that made the higher commit before `r` (commits_backwards' before_by) was last assigned the
    partition before that commit, if it was assigned it with r's offset as the committed offset, before r's answer
    arrived, and no other successful commit of that offset was answered before r's: the coordinator had stored r's
    commit by then (the committed offset a new owner is assigned with is the stored one), before the higher commit,
    which that owner made after its assignment. The committed offset did not go back; r's answer reached its member
    late (a commit on revoke, answered after the rebalance it was made in). None otherwise."""
    p, offset = r["partition"], int(r["offset"])
    assigned = group[(group["consumer"] == r["before_by"]) & (group["partition"] == p)
                     & (group["event"] == "assigned") & (group["t_ns"] < r["before_t"])]
    if assigned.empty:
        return None
    last = assigned.sort_values("t_ns", kind="stable").iloc[-1]
    if pd.isna(last["offset"]) or int(last["offset"]) != offset or not last["t_ns"] < r["t_commit"]:
        return None
    same = group[(group["partition"] == p) & (group["event"] == "commit") & group["error"].isna()
                 & (group["offset"] == offset) & (group["t_ns"] < r["t_commit"])]
    return None if len(same) else int(last["t_ns"])


def own_async_reorder(r, group: pd.DataFrame) -> bool:
    """The lower commit and the higher one before it are the same member's, with no revocation of the partition in
    between: its own asynchronous commits completing out of order, not a stale member's."""
    if r["before_by"] != r["consumer"]:
        return False
    revoked = group[(group["consumer"] == r["consumer"]) & (group["partition"] == r["partition"])
                    & (group["event"] == "revoked") & (group["t_ns"] > r["before_t"]) & (group["t_ns"] < r["t_commit"])]
    return revoked.empty


def skipped(group_reads: pd.DataFrame, final: pd.DataFrame) -> pd.DataFrame:
    """Final-drain records below the group's highest read offset of their partition that the group never read."""
    top = group_reads.groupby("partition")["offset"].max()
    seen = set(zip(group_reads["partition"].astype(int), group_reads["offset"].astype(int)))
    cand = final[final["partition"].map(top).notna()]
    cand = cand[cand["offset"] <= cand["partition"].map(top)]
    keys = list(zip(cand["partition"].astype(int), cand["offset"].astype(int)))
    return cand[[k not in seen for k in keys]].drop_duplicates(["partition", "offset"])


def rereads(group_reads: pd.DataFrame, group: pd.DataFrame) -> pd.DataFrame:
    """Every read of a position the group had already read, with the committed offset its consumer was assigned
    the partition with (`committed`, NaN when unknown)."""
    r = group_reads.sort_values(["t_ns", "consumer", "seq"], kind="stable")
    again = r[r.duplicated(["partition", "offset"], keep="first")].copy()
    if again.empty:
        return again.assign(committed=pd.Series(dtype="float64"))
    assigned = group[group["event"] == "assigned"].sort_values("t_ns", kind="stable")
    committed = np.full(len(again), np.nan)
    for i, row in enumerate(again.itertuples(index=False)):
        mine = assigned[(assigned["consumer"] == row.consumer) & (assigned["partition"] == row.partition)
                        & (assigned["t_ns"] <= row.t_ns)]
        if len(mine) and pd.notna(mine["offset"].iloc[-1]):
            committed[i] = float(mine["offset"].iloc[-1])
    return again.assign(committed=committed)


def killed_holder(r, group: pd.DataFrame, live: pd.DataFrame, kills: pd.DataFrame) -> str | None:
    """Why skipped record `r` may be one a killed member received but never journaled (auto commit), or None."""
    p, off = int(r["partition"]), int(r["offset"])
    mine = group[(group["partition"] == p) & group["event"].isin(("assigned", "revoked"))].sort_values(
        "t_ns", kind="stable")
    for k in kills.itertuples(index=False):
        late, unflushed = False, None        # a covering commit answered after the revocation; its own just before
        before = mine[(mine["consumer"] == k.consumer) & (mine["t_ns"] <= k.t_ns)]
        if before.empty:
            continue
        held_until = k.t_ns
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
                continue
            unflushed = _unflushed_commit(own, live, k, int(before["t_ns"].iloc[-1]), held_until)
            if not late and unflushed is None and not _lost_commit(group, mine, p, held_until, off):
                continue                               # the killed member neither held nor committed p then
        since, start = int(before["t_ns"].iloc[-1]), before["offset"].iloc[-1]
        got = live[(live["consumer"] == k.consumer) & (live["partition"] == p) & (live["t_ns"] >= since)]
        low = int(got["offset"].max()) if len(got) else (int(start) - 1 if pd.notna(start) else -1)
        after = mine[(mine["event"] == "assigned") & (mine["t_ns"] > held_until)]     # the next owner, first
        if after.empty or pd.isna(after["offset"].iloc[0]) or not low < off < int(after["offset"].iloc[0]):
            continue                                   # (its starting offset unknown: nothing can be excused)
        if held_until == k.t_ns:
            held = f"killed holding partition {p}"
        elif unflushed is not None and not late:
            held = (f"killed {(k.t_ns - unflushed) / 1e9:.2f} s after its own auto commit covering the record, "
                    f"answered while it held partition {p}, with nothing journaled since (a member writes what it was "
                    f"handed within {UNFLUSHED_NS / 1e9:.1f} s)")
        else:
            held = (f"killed {(k.t_ns - held_until) / 1e9:.2f} s after partition {p} was revoked from it (its commit "
                    "on revoke covering the records" + ("" if late else ", answered after the kill") + ")")
        return (f"consumer {k.consumer} was {held}, having journaled it up to offset {low}; "
                f"the next owner started at the committed offset {int(after['offset'].iloc[0])}: auto commit "
                "commits what librdkafka handed over (enable.auto.offset.store), journaled or not, so a killed "
                "consumer's last records are delivered at most once (librdkafka CONFIGURATION.md)")
    return None


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


def find(group: pd.DataFrame, reads: pd.DataFrame, model=None, kills: pd.DataFrame | None = None,
         commit: str | None = None) -> pd.DataFrame:
    """The group's anomaly instances, judged: kind, partition, offset, value, t_read_ns, t_complete_ns,
    classification, reason. `kills`: the consumer_kill starts (consumer, t_ns); `commit`: meta's consumer_commit."""
    members = set(group["consumer"])
    live = reads[(reads["phase"] == "live") & reads["consumer"].isin(members)]
    final = reads[reads["phase"] == "final"]
    out: list[dict] = []
    for _, r in commits_backwards(group).iterrows():
        if commit == "auto" and own_async_reorder(r, group):
            out.append({"kind": "commit_backwards", "partition": int(r["partition"]), "offset": int(r["offset"]),
                        "value": None, "t_read_ns": None, "t_complete_ns": int(r["t_commit"]),
                        "classification": "allowed",
                        "reason": f"consumer {r['consumer']}'s auto commit of offset {int(r['offset'])} of partition "
                                  f"{int(r['partition'])} completed after its own commit of {int(r['before'])}, with "
                                  "the partition assigned to it throughout; allowed: the coordinator checks a commit's "
                                  "member and generation only and then replaces the offset whatever it was "
                                  "(OffsetMetadataManager.commitOffset / updateOffset), and librdkafka's background "
                                  "auto commits may complete out of order (one sent again after the coordinator "
                                  "moved)"})
            continue
        if (stored := stored_before_assignment(r, group)) is not None:
            out.append({"kind": "commit_backwards", "partition": int(r["partition"]), "offset": int(r["offset"]),
                        "value": None, "t_read_ns": None, "t_complete_ns": int(r["t_commit"]),
                        "classification": "allowed",
                        "reason": f"consumer {r['consumer']}'s commit of offset {int(r['offset'])} of partition "
                                  f"{int(r['partition'])} was answered {(int(r['t_commit']) - stored) / 1e9:.3f} s "
                                  f"after consumer {r['before_by']} had been assigned the partition with that offset "
                                  f"committed, which then committed {int(r['before'])}: the coordinator had stored it "
                                  "before that assignment (a new owner is assigned the stored offset; no other commit "
                                  "of that offset was answered before it); allowed: the committed offset did not go "
                                  "back, the answer reached its member late"})
            continue
        out.append(_instance("commit_backwards", r, model, t_complete=int(r["t_commit"]),
                             what=f"consumer {r['consumer']} committed offset {int(r['offset'])} of partition "
                                  f"{int(r['partition'])} after offset {int(r['before'])} had been committed",
                             rule="the coordinator accepts commits only from the current generation, whose owner "
                                  "starts at the committed offset (GroupCoordinator OffsetCommit: ILLEGAL_GENERATION; "
                                  "KIP-848: STALE_MEMBER_EPOCH)"))
    for _, r in skipped(live, final).iterrows():
        why = killed_holder(r, group, live, kills) if commit == "auto" and kills is not None and len(kills) else None
        if why:
            out.append({"kind": "group_skip", "partition": int(r["partition"]), "offset": int(r["offset"]),
                        "value": r["value"], "t_read_ns": None, "t_complete_ns": None, "classification": "allowed",
                        "reason": f"partition {int(r['partition'])} offset {int(r['offset'])} was skipped; allowed: "
                                  + why})
            continue
        out.append(_instance("group_skip", r, model, value=r["value"],
                             what=f"partition {int(r['partition'])} offset {int(r['offset'])} is in the final drain, "
                                  "below offsets the group read, and no consumer of the group read it",
                             rule="records are journaled on receipt before any commit covers them: at-least-once "
                                  "(KafkaConsumer javadoc, 'Offsets and Consumer Position')"))
    for _, r in rereads(live, group).iterrows():
        below = pd.notna(r["committed"]) and int(r["offset"]) < int(r["committed"])
        kind = "reread_below_commit" if below else "group_reread"
        what = (f"consumer {r['consumer']} read partition {int(r['partition'])} offset {int(r['offset'])} again"
                + (f", below the committed offset {int(r['committed'])} it was assigned with" if below else
                   "" if pd.isna(r["committed"]) else f", at or above the committed offset {int(r['committed'])}"))
        out.append(_instance(kind, r, model, value=r["value"], t_read=int(r["t_ns"]), what=what,
                             rule="a partition's new owner starts at the committed offset (Kafka documentation, "
                                  "'Consumer position')") if below else
                   {"kind": kind, "partition": int(r["partition"]), "offset": int(r["offset"]), "value": r["value"],
                    "t_read_ns": int(r["t_ns"]), "t_complete_ns": None, "classification": "allowed",
                    "reason": what + "; allowed: at-least-once, the records after the last commit are delivered "
                                     "again after a rebalance"})
    return rows_frame(out, ["kind", "partition", "offset", "value", "t_read_ns", "t_complete_ns", "classification",
                            "reason"])


def _instance(kind, r, model, what: str, rule: str, value=None, t_read=None, t_complete=None) -> dict:
    cause = destructive_cause(model, int(r["partition"]))
    cls, why = ("allowed", f"; allowed: {cause}") if cause else ("violation", f"; {rule}")
    return {"kind": kind, "partition": int(r["partition"]), "offset": int(r["offset"]), "value": value,
            "t_read_ns": t_read, "t_complete_ns": t_complete, "classification": cls, "reason": what + why}


def read_kills(run_dir: Path | str) -> pd.DataFrame:
    """The consumer_kill fault starts of a run (consumer, t_ns): the members killed, and when."""
    path = Path(run_dir) / FAULTS_FILE
    rows = []
    if path.exists():
        for f in pd.read_parquet(path, columns=["t_ns", "action", "details"]).itertuples(index=False):
            d = json.loads(f.details) if f.details else {}
            if f.action == "start" and d.get("effect") == "consumer_kill":
                rows.append({"consumer": d.get("consumer"), "t_ns": int(f.t_ns)})
    return pd.DataFrame(rows, columns=["consumer", "t_ns"])


def read_group(run_dir: Path | str) -> pd.DataFrame | None:
    path = Path(run_dir) / GROUP_FILE
    return ds.dataset(str(path)).to_table().to_pandas() if path.exists() else None
