"""Every anomaly kind declared once for readers: what one instance is, its definition, when it is a violation, and
which module judges it. The documentation's anomaly reference (docs/reference/anomalies.md) is generated from KINDS,
and tests/harness/test_docs.py checks it against the kinds the code finds and judges (history.schema.ANOMALY_KINDS,
checkers.verdict.RULE_OF_KIND, checkers.groups.GROUP_KINDS), so a kind added there without a declaration here fails.
"""
from __future__ import annotations

from dataclasses import dataclass

VERDICT = "checkers/verdict.py"
GROUPS = "checkers/groups.py"
TXNS = "checkers/txns.py"
UNCLEAN = "no unclean election or power loss the model predicts removed it"


@dataclass(frozen=True)
class Kind:
    per: str               # one instance per ...
    definition: str
    violation_when: str    # "never" for kinds that are counted, not judged
    judged_by: str


KINDS: dict[str, Kind] = {
    "lost": Kind(
        "send", "an `ok` send with acks `1` or `all` whose value the completed final drain of its partition lacks, "
        "whether or not a live consumer read it",
        f"it was read (so committed) and {UNCLEAN}; or it was never read and the ISR model classed it guaranteed",
        VERDICT),
    "lost_after_read": Kind(
        "value", "a value a live consumer read in a partition that the completed final drain of that partition "
        "lacks, whatever its send's acks or outcome (a read record was committed)", UNCLEAN, VERDICT),
    "duplicate": Kind(
        "value", "read at two or more distinct (partition, offset) positions",
        "the producer is idempotent and neither a predicted unclean election or power loss nor the client's own "
        "epoch bump (its messages timed out, or it logged a bump, while the write was pending) voided that", VERDICT),
    "phantom": Kind("value", "read, but no send carries it", "always", VERDICT),
    "divergent": Kind(
        "position", "two or more distinct values read at one (partition, offset)",
        "no predicted unclean election or power loss rewrote the position", VERDICT),
    "failed_read": Kind("send", "outcome `fail` (the client said it certainly failed), yet read", "always", VERDICT),
    "offset_mismatch": Kind(
        "send", "`ok` with an offset, read, but never at that offset",
        "its write was not at risk and no predicted unclean election or power loss rewrote the position", VERDICT),
    "nonmonotonic_send": Kind(
        "send", "`ok`, acked at a lower offset than the previous `ok` send (invoke order) of the same process, "
        "producer and partition", "as `duplicate`: an idempotent producer whose promise nothing voided", VERDICT),
    "min_isr_breach": Kind(
        "send", "acks `all`, `ok`, and acknowledged wholly inside a window in which both the ISR model and the "
        "brokers' own metadata put the partition's ISR below min.insync.replicas", "always", VERDICT),
    "poll_skip": Kind(
        "step", "a live consumer's step from offset a to b > a + 1 in a partition while someone read an offset "
        "strictly between", "the consumers assign their partitions (`--consumer-mode assign`, the default); in "
        "subscribe mode a rebalance may commit past unread records", VERDICT),
    "stall": Kind(
        "window", "writes to a partition pending and none acknowledged for longer than `--stall-threshold` "
        "(default 2 s), measured from the sends alone",
        "it lasted longer than `--max-stall` (by default never: Kafka promises no availability bound)", VERDICT),
    "recovered": Kind("send", "outcome `info` (timed out, unknown), yet read", "never (counted)", VERDICT),
    "commit_backwards": Kind(
        "commit", "a successful commit of a partition below an earlier successful one (by outcome time)",
        "unless the model predicts an unclean election or power loss on the partition, or, with auto commit, both "
        "commits are the same member's while it held the partition throughout", GROUPS),
    "group_skip": Kind(
        "record", "in the final drain, below the highest offset the group read in its partition, never read by "
        "any member of the group",
        "unless the model predicts an unclean election or power loss on the partition, or, with auto commit, a "
        "killed member held the partition and the record lies between what it journaled and the offset its next "
        "owner started from", GROUPS),
    "reread_below_commit": Kind(
        "read", "a group member's read of a position the group had read before, below the committed offset its "
        "member was assigned the partition with",
        "unless the model predicts an unclean election or power loss on the partition", GROUPS),
    "group_reread": Kind(
        "read", "such a re-read at or above the committed offset (or with it unknown): at-least-once redelivery",
        "never (counted)", GROUPS),
    "txn_incomplete": Kind(
        "transaction", "a committed transaction some of whose values the final drain of a completed partition "
        "lacks (KIP-98: a committed transaction is visible whole)",
        "unless the model predicts an unclean election or power loss on a partition the transaction spans", TXNS),
    "txn_out_of_order": Kind(
        "transaction and partition", "a committed transaction's values in one partition whose offsets in the final "
        "drain do not increase in the order they were sent", "always (a producer's records are appended in order "
        "per producer id and epoch, ProducerAppendInfo.checkSequence)", TXNS),
}
