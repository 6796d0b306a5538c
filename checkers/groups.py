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

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.dataset as ds

from kafka_chaos.checkers import excuses
from kafka_chaos.checkers.excuses import NO_CLAIM, Cause, Claim, Times
from kafka_chaos.checkers.group_kills import killed_holder, read_kills
from kafka_chaos.checkers.instances import rows_frame
from kafka_chaos.history import kinds

GROUP_FILE = "history/group.parquet"
GROUP_KINDS = kinds.judged_by(kinds.GROUPS)       # declared in history/kinds.py
CLAIM_COLUMNS = ["excuse", "cause_id", "cause_t_ns"]
__all__ = ["find", "read_group", "read_kills", "destructive_cause", "GROUP_KINDS"]


def _truncated_below_commit(cause: Cause, times: Times) -> bool:
    """The loss came after the record at the committed offset's end existed and no later than the anomaly (the
    re-read, or the lower commit's answer): the reset it caused came after it, the anomaly after the reset."""
    if times.sent is None or cause.t_ns < times.sent:
        return False
    until = times.answered if times.answered is not None else times.read
    return until is None or cause.t_ns <= until


COMMITTED_OFFSET_TRUNCATED = excuses.rule(
    "group.committed_offset_truncated", ("commit_backwards", "reread_below_commit"),
    "an unclean election or power loss truncates the partition's log (UnifiedLog.truncateTo removes only what lies "
    "above the truncation point when it happens): where that cut the records below the group's committed offset, "
    "the committed offset is out of range and the consumer's auto.offset.reset (earliest, workloads/) starts over "
    "from the log start (librdkafka rd_kafka_offset_reset, KafkaConsumer OFFSET_OUT_OF_RANGE), so the group reads "
    "and commits below what it had committed",
    "the last record the committed offset covered (offset committed-1, as the group read it) was appended in the "
    "loss window, the loss came after it was sent and no later than the re-read or the lower commit's answer",
    _truncated_below_commit)


OWN_REORDER = excuses.rule(
    "commit_backwards.own_reorder", ("commit_backwards",),
    "the coordinator validates a commit's member and generation (ClassicGroup.validateOffsetCommit, "
    "ConsumerGroup.validateOffsetCommit) and then replaces the stored offset whatever it was "
    "(OffsetMetadataManager.commitOffset): a current member's background auto commits may complete out of order",
    "the higher commit is the same member's, answered before the lower one, with no revocation of the partition and "
    "no other member assigned it at another offset in between", lambda cause, times: True)

STORED_FIRST = excuses.rule(
    "commit_backwards.stored_before_assignment", ("commit_backwards",),
    "a new owner is assigned the stored committed offset (OffsetMetadataManager.fetchOffsets): assigned the lower "
    "commit's offset, the lower commit had been stored before the higher one, and only its answer came late",
    "the higher commit's member was assigned the lower offset before the lower commit's answer, no other commit of "
    "that offset was answered before it, and no owner was assigned the lower offset after the higher commit's answer",
    lambda cause, times: True)


def _higher_commit(r) -> Cause:
    """The cause of an order excuse: the higher commit, by its member and answer time."""
    return Cause(f"commit {r['before_by']} {int(r['before_t'])}", int(r["before_t"]),
                 f"consumer {r['before_by']}'s commit of {int(r['before'])}")


class Spans:
    """The append span (send..ack, from history/sends.parquet joined by value) of the group's records, loaded only
    for the values an excuse asks about (group anomalies are few; the sends file is large)."""

    def __init__(self, live: pd.DataFrame, sends_file: Path | str | None):
        self.live = live.sort_values("t_ns", kind="stable")
        self.file = Path(sends_file) if sends_file is not None else None
        self.known: dict[str, tuple[int, int | None]] = {}
        self.asked: set[str] = set()

    def _load(self, values) -> None:
        want = {v for v in values if isinstance(v, str)} - self.asked
        self.asked |= want
        if not want or self.file is None or not self.file.exists():
            return
        import pyarrow.compute as pc
        t = ds.dataset(str(self.file)).to_table(columns=["value", "outcome", "t_invoke_ns", "t_complete_ns"],
                                                filter=pc.field("value").isin(sorted(want))).to_pandas()
        for v, outcome, sent, done in t.sort_values("t_invoke_ns", kind="stable").itertuples(index=False):
            if v not in self.known:
                self.known[v] = (int(sent), int(done) if outcome == "ok" and pd.notna(done) else None)

    def span(self, value, read_t: int | None = None) -> tuple[int, int] | None:
        """[sent, acked] of `value`, the ack unknown: its first read `read_t` as the upper bound; None: unknown."""
        self._load([value])
        if value not in self.known:
            return None
        sent, acked = self.known[value]
        hi = acked if acked is not None else read_t
        return (sent, hi if hi is not None else sent)

    def with_sends(self, rows: pd.DataFrame) -> pd.DataFrame:
        """`rows` with t_sent_ns and t_acked_ns of their value (NaN where the sends file lacks it)."""
        self._load(rows["value"])
        sent = [self.known.get(v, (None, None)) for v in rows["value"]]
        return rows.assign(t_sent_ns=[s for s, _ in sent], t_acked_ns=[a for _, a in sent])

    def loss_claim(self, model, partition: int, r) -> Claim | None:
        """LOSS_EVENT for record `r` itself: its append span in a loss window whose cause came after it."""
        first = self.live[self.live["value"] == r["value"]]["t_ns"]
        span = self.span(r["value"], int(first.iloc[0]) if len(first) else int(r["t_ns"]))
        return excuses.loss_claim(model, partition, *span) if span else None

    def covered(self, partition: int, committed: int) -> tuple[int, int] | None:
        """The append span of the last record a committed offset covers (offset committed-1, as the group first
        read it)."""
        at = self.live[(self.live["partition"] == partition) & (self.live["offset"] == committed - 1)]
        return self.span(at["value"].iloc[0], int(at["t_ns"].iloc[0])) if len(at) else None


def truncated_commit_claim(model, spans: Spans, partition: int, committed: int, answered: int | None = None,
                           read: int | None = None) -> Claim | None:
    """COMMITTED_OFFSET_TRUNCATED: a loss window holding the last record `committed` covered, its cause between
    that record's send and the anomaly (`answered`: the lower commit's answer; `read`: the re-read)."""
    span = spans.covered(partition, committed)
    if model is None or span is None:
        return None
    loss = excuses.loss_claim(model, partition, *span)
    if loss is None:
        return None
    return excuses.claim(COMMITTED_OFFSET_TRUNCATED, loss.cause,
                         Times(sent=span[0], acked=span[1], read=read, answered=answered))


def destructive_cause(model, partition: int) -> str | None:
    """An unclean election or power loss the model predicts on the partition, if any (its reason). Not a cause of a
    group anomaly (it ignores when the loss was and what it removed; kept for importers): see Spans.loss_claim."""
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
    if assigned.empty or _assigned_with(group, p, offset, after=r["before_t"]):
        return None         # an owner assigned the lower offset after the higher commit's answer: it did go back
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
    # Another member assigned the partition before the lower commit's answer started at the offset stored then: a
    # successful lower commit was processed before that assignment (ClassicGroup.validateOffsetCommit /
    # ConsumerGroup.validateOffsetCommit fence the old generation or member epoch once the group moved on), so that
    # member must have been assigned the lower offset; assigned another, the committed offset went back under it.
    others = group[(group["consumer"] != r["consumer"]) & (group["partition"] == r["partition"])
                   & (group["event"] == "assigned") & (group["t_ns"] > r["before_t"]) & (group["t_ns"] < r["t_commit"])]
    moved_on = others["offset"].notna() & (others["offset"] != int(r["offset"]))
    return revoked.empty and not moved_on.any()


def _assigned_with(group: pd.DataFrame, p, offset: int, after) -> bool:
    """Some member was assigned partition p with `offset` committed after time `after`."""
    return bool(((group["partition"] == p) & (group["event"] == "assigned") & (group["t_ns"] > after)
                 & (group["offset"] == offset)).any())


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


def find(group: pd.DataFrame, reads: pd.DataFrame, model=None, kills: pd.DataFrame | None = None,
         commit: str | None = None, sends_file: Path | str | None = None) -> pd.DataFrame:
    """The group's anomaly instances, judged: kind, partition, offset, value, t_read_ns, t_complete_ns,
    classification, reason, and the excuse's claim (excuse, cause_id, cause_t_ns). `kills`: the consumer_kill
    starts (group_kills.read_kills); `commit`: meta's consumer_commit; `sends_file`: history/sends.parquet, for
    the append span (send..ack) of the records an excuse needs."""
    members = set(group["consumer"])
    live = reads[(reads["phase"] == "live") & reads["consumer"].isin(members)]
    spans = Spans(live, sends_file)
    out = _backwards_rows(group, model, commit, spans)
    out += _skip_rows(group, live, reads[reads["phase"] == "final"], model, kills, commit, spans)
    out += _reread_rows(group, live, model, spans)
    return rows_frame(out, ["kind", "partition", "offset", "value", "t_read_ns", "t_complete_ns", "classification",
                            "reason", *CLAIM_COLUMNS])


def _backwards_rows(group, model, commit, spans: "Spans") -> list[dict]:
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
                                  "moved)", **Claim(OWN_REORDER, _higher_commit(r)).columns()})
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
                                  "back, the answer reached its member late",
                        **Claim(STORED_FIRST, _higher_commit(r)).columns()})
            continue
        c = truncated_commit_claim(model, spans, int(r["partition"]), int(r["before"]), answered=int(r["t_commit"]))
        out.append(_instance("commit_backwards", r, c, t_complete=int(r["t_commit"]),
                             what=f"consumer {r['consumer']} committed offset {int(r['offset'])} of partition "
                                  f"{int(r['partition'])} after offset {int(r['before'])} had been committed",
                             rule="the coordinator accepts commits only from the current generation, whose owner "
                                  "starts at the committed offset (GroupCoordinator OffsetCommit: ILLEGAL_GENERATION; "
                                  "KIP-848: STALE_MEMBER_EPOCH)"))
    return out


def _skip_rows(group, live, final, model, kills, commit, spans: "Spans") -> list[dict]:
    out: list[dict] = []
    for _, r in spans.with_sends(skipped(live, final)).iterrows():
        why = killed_holder(r, group, live, kills) if commit == "auto" and kills is not None and len(kills) else None
        if why:
            held, c = why
            out.append({"kind": "group_skip", "partition": int(r["partition"]), "offset": int(r["offset"]),
                        "value": r["value"], "t_read_ns": None, "t_complete_ns": None, "classification": "allowed",
                        "reason": f"partition {int(r['partition'])} offset {int(r['offset'])} was skipped: {held}; "
                                  + c.reason()} | c.columns())
            continue
        c = spans.loss_claim(model, int(r["partition"]), r)
        out.append(_instance("group_skip", r, c, value=r["value"],
                             what=f"partition {int(r['partition'])} offset {int(r['offset'])} is in the final drain, "
                                  "below offsets the group read, and no consumer of the group read it",
                             rule="records are journaled on receipt before any commit covers them: at-least-once "
                                  "(KafkaConsumer javadoc, 'Offsets and Consumer Position')"))
    return out


def _reread_rows(group, live, model, spans: "Spans") -> list[dict]:
    out: list[dict] = []
    for _, r in rereads(live, group).iterrows():
        below = pd.notna(r["committed"]) and int(r["offset"]) < int(r["committed"])
        kind = "reread_below_commit" if below else "group_reread"
        what = (f"consumer {r['consumer']} read partition {int(r['partition'])} offset {int(r['offset'])} again"
                + (f", below the committed offset {int(r['committed'])} it was assigned with" if below else
                   "" if pd.isna(r["committed"]) else f", at or above the committed offset {int(r['committed'])}"))
        if below:
            c = truncated_commit_claim(model, spans, int(r["partition"]), int(r["committed"]), read=int(r["t_ns"]))
            out.append(_instance(kind, r, c, value=r["value"], t_read=int(r["t_ns"]), what=what,
                                 rule="a partition's new owner starts at the committed offset (Kafka documentation, "
                                      "'Consumer position')"))
            continue
        out.append({"kind": kind, "partition": int(r["partition"]), "offset": int(r["offset"]), "value": r["value"],
                    "t_read_ns": int(r["t_ns"]), "t_complete_ns": None, "classification": "allowed",
                    "reason": what + "; allowed: at-least-once, the records after the last commit are delivered "
                                     "again after a rebalance"})
    return out


def _instance(kind, r, claim: Claim | None, what: str, rule: str, value=None, t_read=None, t_complete=None) -> dict:
    cls, why = ("allowed", f"; {claim.reason()}") if claim else ("violation", f"; {rule}")
    return {"kind": kind, "partition": int(r["partition"]), "offset": int(r["offset"]), "value": value,
            "t_read_ns": t_read, "t_complete_ns": t_complete, "classification": cls,
            "reason": what + why} | (claim.columns() if claim else NO_CLAIM)


def read_group(run_dir: Path | str) -> pd.DataFrame | None:
    path = Path(run_dir) / GROUP_FILE
    return ds.dataset(str(path)).to_table().to_pandas() if path.exists() else None
