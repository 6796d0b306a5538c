"""Excuses as causal claims: an allowed anomaly names the event that caused it and the rule that lets that event
cause it, and the rule's timing condition is checked against the anomaly's own times before the excuse holds.

An excuse that accepts a cause from any time in the run excuses what Kafka forbids (issue 48: a power loss 200 s
after a commit excused the committed write's loss). So every excuse here is a `Rule`: its name, the Kafka mechanism
it mirrors (with the code or document cited) and a `timing` predicate over the cause's time and the anomaly's
(`Times`). A checker that wants to allow an anomaly asks `claim(rule, cause, times)`; the claim is refused (None)
where the cause does not precede or cover the anomaly as the mechanism requires, and the anomaly stays a violation.
An allowed instance carries `excuse`, `cause_id` and `cause_t_ns` into anomalies.parquet (docs/history.md,
"Excuses").

Cause ids: `f<row>` a row of history/faults.parquet (its row number in the file as written); `election p<P> e<E>` the
model's election of epoch E on partition P; `commit <member> <t_ns>` a group member's commit answer;
`observed <what>` an event seen in the samples or node logs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from kafka_chaos.checkers.model.windows import Cause

__all__ = ["Cause", "Claim", "Rule", "Times", "RULES", "claim", "rule"]


@dataclass(frozen=True)
class Times:
    """The anomaly's own times (ns; None where the history has none): the write's send and ack, the first read,
    the commit's send and answer, the assignment that started a member at a committed offset."""

    sent: int | None = None
    acked: int | None = None
    read: int | None = None
    committed: int | None = None
    answered: int | None = None
    assigned: int | None = None

    def first(self) -> int | None:
        """The earliest time the anomaly's record or commit existed."""
        known = [t for t in (self.sent, self.acked, self.read, self.committed, self.answered) if t is not None]
        return min(known) if known else None


@dataclass(frozen=True)
class Rule:
    """One excuse: which anomaly kinds it may allow, why Kafka allows them given the cause (cited), and when."""

    name: str
    kinds: tuple[str, ...]
    mechanism: str
    timing: str                                    # the timing condition in words, for the reason and the docs
    holds: Callable[[Cause, Times], bool]          # the timing condition itself
    # The same condition over many writes' send times at once (int64 ns, and whether each is known), where the
    # judge asks it of a window's rows together; None: asked row by row.
    holds_sent: Callable[[Cause, np.ndarray, np.ndarray], np.ndarray] | None = None

    def holds_for_sends(self, cause: Cause, sent: np.ndarray, known: np.ndarray) -> np.ndarray:
        if self.holds_sent is not None:
            return np.asarray(self.holds_sent(cause, sent, known), dtype=bool)
        return np.array([self.holds(cause, Times(sent=int(t) if k else None)) for t, k in zip(sent, known)],
                        dtype=bool)


RULES: dict[str, Rule] = {}


def rule(name: str, kinds: tuple[str, ...], mechanism: str, timing: str,
         holds: Callable[[Cause, Times], bool], holds_sent=None) -> Rule:
    """Declare an excuse rule (once per name: the ablation tests enumerate RULES)."""
    if name in RULES:
        raise ValueError(f"excuse rule {name!r} declared twice")
    RULES[name] = Rule(name, kinds, mechanism, timing, holds, holds_sent)
    return RULES[name]


@dataclass(frozen=True)
class Claim:
    """An excuse that held: the rule and its cause."""

    rule: Rule
    cause: Cause

    def reason(self) -> str:
        return f"allowed by {self.rule.name}: {self.cause.what} ({self.cause.id} at t={self.cause.t_ns}); " \
               f"{self.rule.mechanism}"

    def columns(self) -> dict:
        return {"excuse": self.rule.name, "cause_id": self.cause.id, "cause_t_ns": int(self.cause.t_ns)}


def claim(r: Rule, cause: Cause | None, times: Times) -> Claim | None:
    """The excuse, if its cause is there and its timing condition holds for this anomaly; None otherwise."""
    if cause is None or not r.holds(cause, times):
        return None
    return Claim(r, cause)


NO_CLAIM = {"excuse": None, "cause_id": None, "cause_t_ns": None}


# -- the excuse every checker shares: a loss event that removed the record ---------------------------------------
def _covers_append(cause: Cause, times: Times) -> bool:
    """The loss event happened after the record existed (it cannot remove what was written after it)."""
    first = times.first()
    return first is None or cause.t_ns >= first


LOSS_EVENT = rule(
    "loss_event", ("group_skip", "reread_below_commit", "commit_backwards", "txn_incomplete", "g1a", "lso_stuck",
                   "lost", "lost_after_read", "divergent", "offset_mismatch"),
    "an unclean election (PartitionChangeBuilder.electLeader outside the ISR/ELR) or a power loss that cut the "
    "elected log removes the records of its loss window: the other replicas truncate to the new leader's log "
    "(UnifiedLog.truncateTo, KIP-101/KIP-279), removing only what lies above the truncation point when it happens",
    "the record was appended in the loss window's span (its send..ack or read meets it) and the event came after",
    _covers_append, lambda cause, sent, known: ~known | (sent <= cause.t_ns))

# The model classed an unread acked write at risk: its send..ack meets a risk window the cause opened
# (ModelResult.classify). The window is the timing condition: an acks=1 tail is lost when its old leader truncates
# to the new leader's log, which may be after the election that names the window (a controlled shutdown keeps
# acking until it is applied), so the cause's own time is not compared with the send.
MODEL_RISK = rule(
    "model_risk", ("lost", "offset_mismatch", "duplicate", "nonmonotonic_send"),
    "the ISR model replays the run's faults on Kafka's replication rules (checkers/model, docs/model.md) and finds "
    "an election, power loss or zombie leader after which no leader need hold the write",
    "the write's send..ack meets the risk window its cause opened",
    lambda cause, times: True, lambda cause, sent, known: np.ones(len(sent), dtype=bool))


def loss_claim(model, partition, t_lo_ns: int, t_hi_ns: int, times: Times | None = None) -> Claim | None:
    """LOSS_EVENT's claim for a record of `partition` appended in [t_lo_ns, t_hi_ns]: the model's loss window
    that can hold it (ModelResult.loss_window) and its cause, if the cause came after the record existed."""
    if model is None or partition is None:
        return None
    w = model.loss_window(int(partition), int(t_lo_ns), int(t_hi_ns))
    if w is None:
        return None
    cause = w.cause or Cause(f"window p{w.partition} {w.start_ns}..{w.end_ns}", w.end_ns, w.reason)
    return claim(LOSS_EVENT, cause, times or Times(sent=int(t_lo_ns), acked=int(t_hi_ns)))


# Allowed by the run's own settings or the client's logged behaviour, not by a fault: the cause is the setting (at
# the run's start, in force throughout) or the client's logged event inside the write's send..ack.
SETTING = rule(
    "setting", ("duplicate", "nonmonotonic_send", "stall"),
    "the producer runs without idempotence (enable.idempotence=false: retries may append a batch again or reorder, "
    "ProducerConfig ENABLE_IDEMPOTENCE_DOC, librdkafka CONFIGURATION.md), or no availability bound was asked "
    "(--max-stall unset: Kafka promises none)",
    "the setting is in force for the whole run", lambda cause, times: True)

CLIENT_EPOCH_BUMP = rule(
    "client_epoch_bump", ("duplicate", "nonmonotonic_send"),
    "the client bumped the idempotent producer's epoch while the write was pending (librdkafka "
    "rd_kafka_idemp_drain_epoch_bump after OUT_OF_ORDER_SEQUENCE_NUMBER or a message timeout; KIP-360), and a retry "
    "of a batch that may already be in the log is appended again under the new epoch",
    "the bump (clients.log) falls between the write's send and its ack",
    lambda cause, times: (times.sent is None or times.sent <= cause.t_ns)
    and (times.acked is None or cause.t_ns <= times.acked))
