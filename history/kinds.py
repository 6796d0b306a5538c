"""Every anomaly kind declared once: what one instance is, its definition, when it is a violation, which module
judges it and by which rule, the words of its reason, its marker in the report, and (for the kinds decided per
value) its predicate.

One home, read by everything that names a kind: history.schema.ANOMALY_KINDS (the order of verdict.json and
anomalies.parquet) is KINDS' order; the Spark queries (checkers/spark/) and the DuckDB yardstick (bench/) evaluate
the same PREDICATES over the same per-value summary; the verdict's judge takes each kind's rule and fixed words
from here; the report its marker; the documentation's anomaly reference (docs/reference/anomalies.md) is generated
from it. The pandas reference (checkers/reference.py) computes the kinds its own way on purpose (it is the
cross-check) and takes only their names from here. In history/ because anomalies.parquet's kinds are part of the
results format, which the checkers and the report both read.

Adding a kind decided per value: one entry here with its predicate (docs/architecture.md, "Adding an anomaly
kind"). Any other kind: one entry here plus the query that finds it.
"""
from __future__ import annotations

from dataclasses import dataclass

VERDICT = "checkers/judge/rules.py"
GROUPS = "checkers/groups.py"
TXNS = "checkers/txns.py"
EOS = "checkers/eos.py"
LSO = "checkers/lso.py"
REPLICAS = "checkers/replica_audit.py"
UNCLEAN = "no unclean election or power loss the model predicts removed it"
EOS_EXCUSE = "unless a loss window the model predicts on a partition involved holds what the transactions involved " \
    "appended, from their begin to their markers' deadline (a lost output: its records or COMMIT marker; an aborted " \
    "read: its ABORT marker; a second copy: a loss between the copies)"

# The per-value summary every engine computes before the predicates, one row per (run, value):
#   sent           a send carries the value            ok / failed / indeterminate: its outcome ok / fail / info
#   acked_level    its acks were 1 or all              s_p, s_o: the partition and offset it was acked at (-1: none)
#   n_pos          how many distinct positions it was read at
#   s_fin          the final drain read it in s_p      at_acked: it was read at (s_p, s_o)
#   lar_p          a partition a live consumer read it in and the final drain lacks it in (NULL: none)
PER_VALUE_COLUMNS = ("sent", "ok", "failed", "indeterminate", "acked_level", "s_p", "s_o", "n_pos", "s_fin",
                     "at_acked", "lar_p")


@dataclass(frozen=True)
class Kind:
    per: str               # one instance per ...
    definition: str
    violation_when: str    # "never" for kinds that are counted, not judged
    judged_by: str
    rule: str | None = None        # the judge's rule (checkers/judge/rules.py Judge._<rule>); None: judged elsewhere
    because: str | None = None     # the fixed reason of a kind the rule "always" makes a violation
    describe: str | None = None    # the fixed words for one instance (None: the judge builds them from the row)
    marker: tuple[str, str] | None = None   # the report's figure marker: (plotly symbol, colour)
    predicate: str | None = None   # SQL over PER_VALUE_COLUMNS (the kinds decided per value)


KINDS: dict[str, Kind] = {
    "lost": Kind(
        "send", "an `ok` send with acks `1` or `all` whose value the completed final drain of its partition lacks, "
        "whether or not a live consumer read it",
        f"it was read (so committed) and {UNCLEAN}; or it was never read and the ISR model classed it guaranteed",
        VERDICT,
        rule="lost", marker=("x", "#c62828"),
        predicate="ok AND acked_level AND s_p >= 0 AND NOT coalesce(s_fin, false)"),
    "lost_after_read": Kind(
        "value", "a value a live consumer read in a partition that the completed final drain of that partition "
        "lacks, whatever its send's acks or outcome (a read record was committed)", UNCLEAN, VERDICT,
        rule="lost_after_read", predicate="lar_p IS NOT NULL"),
    "duplicate": Kind(
        "value", "read at two or more distinct (partition, offset) positions",
        "the producer is idempotent and neither a predicted unclean election or power loss nor the client's own "
        "epoch bump (its messages timed out, or it logged a bump, while the write was pending) voided that", VERDICT,
        rule="out_of_order", marker=("diamond", "#6a1b9a"), predicate="n_pos >= 2"),
    "phantom": Kind("value", "read, but no send carries it", "always", VERDICT,
        rule="always", because="no truncation or election creates a value nobody sent",
        describe="read, but no send carries this value", marker=("star", "#ef6c00"),
        predicate="n_pos > 0 AND NOT sent"),
    "divergent": Kind(
        "position", "two or more distinct values read at one (partition, offset)",
        "no predicted unclean election or power loss rewrote the position", VERDICT,
        rule="rewritten", marker=("square", "#ad1457")),
    "failed_read": Kind("send", "outcome `fail` (the client said it certainly failed), yet read", "always, except a "
        "transactional producer's aborted write (`_TXN_ABORTED`) whose ABORT marker a predicted loss window holds "
        "(from its send to the markers' deadline after the abort, its loss before the read): the elected replica has "
        "it in an open transaction, which the producer's next COMMIT marker commits", VERDICT,
        rule="always", because="a send the client reported as certainly failed reached the log",
        describe="send failed definitely, yet the value was read", marker=("triangle-down", "#5d4037"),
        predicate="failed AND n_pos > 0"),
    "offset_mismatch": Kind(
        "send", "`ok` with an offset, read, but never at that offset",
        "its write was not at risk and no predicted unclean election or power loss rewrote the position", VERDICT,
        rule="rewritten", marker=("triangle-up", "#283593"),
        predicate="ok AND s_o >= 0 AND n_pos > 0 AND NOT coalesce(at_acked, false)"),
    "nonmonotonic_send": Kind(
        "send", "`ok`, acked at a lower offset than the previous `ok` send (invoke order) of the same process, "
        "producer and partition", "as `duplicate`: an idempotent producer whose promise nothing voided", VERDICT,
        rule="out_of_order",
        describe="acked at a lower offset than the producer's previous send to this partition",
        marker=("cross", "#00838f")),
    "min_isr_breach": Kind(
        "send", "acks `all`, `ok`, and acknowledged wholly inside a window in which both the ISR model and the "
        "brokers' own metadata put the partition's ISR below min.insync.replicas", "always", VERDICT,
        rule="always", because="Kafka rejects acks=all with NOT_ENOUGH_REPLICAS while the ISR is below "
        "min.insync.replicas (Partition.appendRecordsToLeader)",
        describe="acks=all write acknowledged while the partition's ISR was below min.insync.replicas"),
    "poll_skip": Kind(
        "step", "a live consumer's step from offset a to b > a + 1 in a partition while someone read an offset "
        "strictly between", "always in assign mode (`--consumer-mode assign`, the default); in subscribe mode "
        "unless the consumer was assigned the partition between the two reads at a committed offset past the "
        "skipped records (group.parquet: another member read and committed them)", VERDICT,
        rule="poll_skip", marker=("circle-open", "#546e7a")),
    "stall": Kind(
        "window", "writes to a partition pending and none acknowledged for longer than `--stall-threshold` "
        "(default 2 s), measured from the sends alone",
        "it lasted longer than `--max-stall` (by default never: Kafka promises no availability bound)", VERDICT,
        rule="stall"),
    "recovered": Kind("send", "outcome `info` (timed out, unknown), yet read", "never (counted)", VERDICT,
        describe="indeterminate send whose value was read", predicate="indeterminate AND n_pos > 0"),
    "commit_backwards": Kind(
        "commit", "a successful commit of a partition below an earlier successful one (by outcome time)",
        "unless the model predicts an unclean election or power loss on the partition, or, with auto commit, both "
        "commits are the same member's while it held the partition throughout", GROUPS),
    "group_skip": Kind(
        "record", "in the final drain, below the highest offset the group read in its partition, never read by "
        "any member of the group",
        "unless the model predicts an unclean election or power loss on the partition, or, with auto commit, a "
        "killed member held the partition (or its own commit covering the record came just before the kill) and the "
        "record lies between what it journaled and the offset its next owner started from", GROUPS),
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
        "unless a loss window the model predicts on a partition it lacks a value in holds its records or its COMMIT "
        "marker (appended by the markers' deadline after its end, or its producer's next committed transaction)", TXNS),
    "txn_out_of_order": Kind(
        "transaction and partition", "a committed transaction's values in one partition whose offsets in the final "
        "drain do not increase in the order they were sent", "always (a producer's records are appended in order "
        "per producer id and epoch, ProducerAppendInfo.checkSequence)", TXNS),
    "eos_lost": Kind(
        "input record", "an input record below the group's final committed offset of its partition with no "
        "committed output in the completed final drain (`--workload eos`)", EOS_EXCUSE, EOS),
    "eos_duplicate": Kind(
        "input record", "an input record with two or more committed outputs (copies from distinct transactions) in "
        "the final drain: the offsets commit atomically with the output (KIP-98, KIP-447)", EOS_EXCUSE, EOS),
    "eos_out_of_order": Kind(
        "partition", "the final drain's outputs of one partition (each input's first copy) not in the order of "
        "their inputs", EOS_EXCUSE, EOS),
    "eos_offset_ahead": Kind(
        "transaction and partition", "a committed transaction committed offset o of an input partition and the "
        "final drain holds no committed output of input o-1 (offsets ahead of the output written)", EOS_EXCUSE, EOS),
    "eos_offset_behind": Kind(
        "partition", "committed outputs of inputs at or above the group's final committed offset of their "
        "partition, as the brokers answered once the processors stopped (output ahead of the offsets)",
        EOS_EXCUSE, EOS),
    "g0": Kind(
        "strong component", "write cycle (Adya's G0): transactions in a cycle of ww dependencies (the next version "
        "of an input partition's committed offset, or the next transaction in an output partition's log)",
        EOS_EXCUSE, EOS),
    "g1a": Kind(
        "transaction and reader", "aborted read (G1a): a read_committed reader read an aborted transaction's "
        "output, or a committed transaction started at an offset only an aborted transaction committed",
        EOS_EXCUSE, EOS),
    "g1c": Kind(
        "strong component", "circular information flow (G1c): transactions in a cycle of ww and wr dependencies "
        "with at least one wr (a transaction starting an input partition at the offset another committed)",
        EOS_EXCUSE, EOS),
    "internal": Kind(
        "transaction and partition", "a committed transaction whose own reads of an input partition are not "
        "consecutive (int-poll-skip, int-nonmonotonic-poll) or whose writes to a partition are acked at "
        "non-increasing offsets (int-nonmonotonic-send)", EOS_EXCUSE, EOS),
    "precommitted_read": Kind(
        "reader and transaction", "a transaction's output read, or the offset it committed started from by "
        "another processor, before that transaction called commit", EOS_EXCUSE, EOS),
    "lso_stuck": Kind(
        "stretch of samples", "a partition's last stable offset at one value below its high watermark for longer "
        "than transaction.timeout.ms plus the coordinator's abort interval and marker write, counted from the "
        "last of: every fault healed, the transaction log's ISR back (its abort is written with requiredAcks -1), "
        "the partition's own ISR back (so are its markers) (history/lso.parquet; KAFKA-20716's shape); a "
        "read_committed final drain resting there leaves the partition without a loss verdict",
        "always (the reason names the open transaction's producer id when the brokers name it, the release's "
        "KIP-890 rules, and a predicted unclean election or power loss whose window held the stuck transaction's "
        "records, if any)", LSO),
    "replica_divergence": Kind(
        "stretch of offsets", "two replicas of a partition, both in its ISR at the end-of-run replica audit, hold "
        "different records (value digest, leader epoch, producer id, producer epoch, sequence, control flag, a "
        "failing batch CRC) or one lacks a record the other holds, at consecutive offsets below the partition's high "
        "watermark (history/replicas.parquet, read from each replica's own segment files)",
        "always, on every release and setting, unclean election included: followers append the leader's batches "
        "as they are, the high watermark advances only past what every ISR member fetched "
        "(Partition.maybeIncrementLeaderHW), and a diverged follower truncates to the leader's epoch end offset "
        "before it fetches (KIP-101, KIP-279)", REPLICAS, marker=("hexagram", "#b71c1c")),
    "replica_difference": Kind(
        "stretch of offsets, or partition", "replicas that differ where Kafka promises nothing: at or above the high "
        "watermark, on a replica outside the ISR, in the ISR members' leader-epoch checkpoints (a leader assigns "
        "its epoch on election even if it appends nothing), or a replica the audit could not read",
        "never (counted)", REPLICAS),
}


PREDICATES: dict[str, str] = {k: v.predicate for k, v in KINDS.items() if v.predicate}
"""The kinds decided per value, each by its predicate over PER_VALUE_COLUMNS."""


def judged_by(module: str) -> tuple[str, ...]:
    """The kinds a module judges, in KINDS' order."""
    return tuple(k for k, v in KINDS.items() if v.judged_by == module)
