"""A subscribe-mode `poll_skip` judged by its cause: the consumer's own reassignment of the partition at a committed
offset past the records it skipped. Without one, a member's position moved past records others read for no
reason Kafka gives, as in assign mode (a violation).

A member given a partition starts at the group's committed offset (OffsetFetch on assignment: librdkafka's
rd_kafka_cgrp_assign fetches committed offsets, rdkafka_cgrp.c; Kafka's ConsumerCoordinator.
refreshCommittedOffsetsIfNeeded). Another member that held the partition in between read and committed past the
records this one never read. Read from history/group.parquet's `assigned` rows; runs from before it keep the judge's
words for subscribe mode (allowed, no cause named)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from kafka_chaos.checkers.excuses import Cause, Claim, Times, claim, rule

SUBSCRIBE_EXCUSE = "; allowed in subscribe mode"    # the words the judge's setting excuse starts with


def _assigned_between(cause: Cause, times: Times) -> bool:
    """times.read: the landing read b; times.assigned: the consumer's read of a, the step's start."""
    return times.read is not None and times.assigned is not None and times.assigned < cause.t_ns <= times.read


REASSIGNED_PAST = rule(
    "poll_skip.reassigned_past", ("poll_skip",),
    "a member given a partition starts at the group's committed offset (ConsumerCoordinator."
    "refreshCommittedOffsetsIfNeeded; librdkafka's assign fetches committed offsets), which the member that held it "
    "in between had moved past records this one never read",
    "the consumer was assigned the partition after its read of the step's start and no later than its read where it "
    "landed, at a committed offset above the start + 1 and no higher than the landing offset (or one the journal "
    "could not fetch: its error)", _assigned_between)


def rejudge(judged: pd.DataFrame, group: pd.DataFrame, reads: pd.DataFrame) -> pd.DataFrame:
    """judged with each poll_skip row classed by REASSIGNED_PAST: allowed naming the assignment, else a violation."""
    at = np.flatnonzero((judged["kind"] == "poll_skip").to_numpy(dtype=bool))
    if not len(at):
        return judged
    assigned = group[group["event"] == "assigned"]
    by_member = {k: g.sort_values("t_ns") for k, g in assigned.groupby(["consumer", "partition"])}
    live = reads[reads["phase"] != "final"]
    read_at = {k: g for k, g in live.groupby(["consumer", "partition", "offset"])}
    out = judged.copy()
    for i in at:
        r = out.iloc[i]
        found = reassignment(r, by_member, read_at)
        words = str(r["reason"]).split(SUBSCRIBE_EXCUSE)[0]
        if found is None:
            out.iloc[i, out.columns.get_loc("classification")] = "violation"
            out.iloc[i, out.columns.get_loc("reason")] = words + "; subscribe mode, but no assignment of the " \
                "partition to this consumer past the skipped records explains the jump (group.parquet)"
            for col in ("excuse", "cause_id", "cause_t_ns"):
                out.iloc[i, out.columns.get_loc(col)] = None
            continue
        out.iloc[i, out.columns.get_loc("classification")] = "allowed"
        out.iloc[i, out.columns.get_loc("reason")] = words + "; " + found.reason()
        for col, value in found.columns().items():
            out.iloc[i, out.columns.get_loc(col)] = value
    return out


def reassignment(r, by_member: dict, read_at: dict) -> Claim | None:
    """The latest `assigned` row of r's consumer and partition that explains the step from_offset -> offset."""
    key = (r["consumer"], int(r["partition"]))
    a, b, t_b = int(r["from_offset"]), int(r["offset"]), int(r["t_read_ns"])
    starts = read_at.get((*key, a))
    before = starts[starts["t_ns"] < t_b]["t_ns"] if starts is not None else pd.Series(dtype="int64")
    t_a = int(before.max()) if len(before) else None
    for e in reversed(list(by_member.get(key, pd.DataFrame()).itertuples())):
        known = pd.notna(e.offset)
        if (known and not a + 1 < int(e.offset) <= b) or (not known and pd.isna(e.error)):
            continue            # no commit yet: auto.offset.reset=earliest (workloads/group_consumer.py) starts low
        at = f"committed offset {int(e.offset)}" if known else "a committed offset the journal could not fetch"
        cause = Cause(f"assigned {r['consumer']} p{key[1]} {int(e.t_ns)}", int(e.t_ns),
                      f"{r['consumer']} assigned partition {key[1]} at {at}")
        found = claim(REASSIGNED_PAST, cause, Times(read=t_b, assigned=t_a))
        if found is not None:
            return found
    return None
