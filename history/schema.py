"""Exact Arrow schemas of the history files and of the checker's output (docs/history.md is the contract).

Writers (the workloads) build their Parquet files with these schemas; the checker validates against them.
Only pyarrow is imported here, so any module can depend on this one.
"""
from __future__ import annotations

import pyarrow as pa

from kafka_chaos.history.kinds import KINDS

ACKS_LEVELS = ("0", "1", "all")     # sends.acks: what the producer asked the leader for
ACKED = ("1", "all")                # the levels a broker acknowledges: an `ok` send with these reached a log
ACKS_ALIASES = {"-1": "all"}        # Kafka's other spelling of all; a run records the level, never the alias
ACKS_CHOICES = ACKS_LEVELS + tuple(ACKS_ALIASES)    # what `--acks` and a producer profile accept


def acks_level(value) -> str:
    """The level of ACKS_LEVELS an accepted acks spelling means (ValueError for one not in ACKS_CHOICES): the one
    normalisation of acks, for the command line and producer profiles alike."""
    text = str(value)
    if text not in ACKS_CHOICES:
        raise ValueError(f"acks {text!r} is not one of {', '.join(ACKS_CHOICES)}")
    return ACKS_ALIASES.get(text, text)


SENDS_SCHEMA = pa.schema([
    pa.field("op_id", pa.int64(), nullable=False),
    pa.field("process", pa.int32(), nullable=False),
    pa.field("producer", pa.string(), nullable=False),
    pa.field("acks", pa.string(), nullable=False),
    pa.field("idempotent", pa.bool_(), nullable=False),
    pa.field("key", pa.string(), nullable=True),
    pa.field("value", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=True),
    pa.field("offset", pa.int64(), nullable=True),
    pa.field("outcome", pa.string(), nullable=False),
    pa.field("error", pa.string(), nullable=True),
    pa.field("t_invoke_ns", pa.int64(), nullable=False),
    pa.field("t_complete_ns", pa.int64(), nullable=True),
])

READS_SCHEMA = pa.schema([
    pa.field("consumer", pa.string(), nullable=False),
    pa.field("seq", pa.int64(), nullable=False),
    pa.field("phase", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64(), nullable=False),
    pa.field("key", pa.string(), nullable=True),
    pa.field("value", pa.string(), nullable=False),
    pa.field("t_ns", pa.int64(), nullable=False),
])

FAULTS_SCHEMA = pa.schema([
    pa.field("t_ns", pa.int64(), nullable=False),
    pa.field("action", pa.string(), nullable=False),
    pa.field("fault", pa.string(), nullable=False),
    pa.field("nodes", pa.list_(pa.int32()), nullable=False),
    pa.field("details", pa.string(), nullable=False),
])

CLUSTER_SCHEMA = pa.schema([
    pa.field("t_ns", pa.int64(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("leader", pa.int32(), nullable=True),
    pa.field("isr", pa.list_(pa.int32()), nullable=False),
    pa.field("elr", pa.list_(pa.int32()), nullable=True),
    pa.field("high_watermark", pa.int64(), nullable=True),
    pa.field("controller", pa.int32(), nullable=True),
])

# history/group.parquet: what the consumers of one group did with the group (subscribe mode only).
GROUP_EVENTS = ("assigned", "revoked", "commit")
GROUP_SCHEMA = pa.schema([
    pa.field("consumer", pa.string(), nullable=False),
    pa.field("t_ns", pa.int64(), nullable=False),
    pa.field("event", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64(), nullable=True),
    pa.field("error", pa.string(), nullable=True),
])

# history/txns.parquet: one row per transaction of a transactional producer (--transactions). Its values are
# "<process>-<seq>" for seq in first_seq .. first_seq + count - 1.
TXNS_SCHEMA = pa.schema([
    pa.field("process", pa.int32(), nullable=False),
    pa.field("producer", pa.string(), nullable=False),
    pa.field("txn", pa.int64(), nullable=False),
    pa.field("first_seq", pa.int64(), nullable=False),
    pa.field("count", pa.int32(), nullable=False),
    pa.field("outcome", pa.string(), nullable=False),      # committed, aborted or unknown
    pa.field("error", pa.string(), nullable=True),
    pa.field("t_ns", pa.int64(), nullable=False),
])

# history/eos.parquet: one row per transaction of an exactly-once processor (--workload eos, history/eos.py).
EOS_SCHEMA = pa.schema([
    pa.field("processor", pa.string(), nullable=False),
    pa.field("process", pa.int32(), nullable=False),
    pa.field("txn", pa.int64(), nullable=False),
    pa.field("outcome", pa.string(), nullable=False),           # committed, aborted or unknown
    pa.field("error", pa.string(), nullable=True),
    pa.field("read_partitions", pa.list_(pa.int32()), nullable=False),
    pa.field("read_offsets", pa.list_(pa.int64()), nullable=False),
    pa.field("write_partitions", pa.list_(pa.int32()), nullable=False),
    pa.field("write_offsets", pa.list_(pa.int64()), nullable=False),   # elements null: offset unknown
    pa.field("commit_partitions", pa.list_(pa.int32()), nullable=False),
    pa.field("commit_offsets", pa.list_(pa.int64()), nullable=False),
    pa.field("t_begin_ns", pa.int64(), nullable=False),
    pa.field("t_commit_ns", pa.int64(), nullable=True),          # commit (or abort) invoked; null: neither
    pa.field("t_end_ns", pa.int64(), nullable=False),
])

# history/lso.parquet: each partition's last stable offset beside its high watermark, per state sample (from the
# same samples as cluster.parquet; a transactional workload only).
LSO_SCHEMA = pa.schema([
    pa.field("t_ns", pa.int64(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("high_watermark", pa.int64(), nullable=True),
    pa.field("last_stable_offset", pa.int64(), nullable=True),
])

# history/client_stats.parquet: the producers' own statistics, about once a second (librdkafka's statistics JSON;
# the Java client's producer metrics). One row per (producer, scope, broker or partition) per sample.
CLIENT_STATS_SCOPES = ("client", "broker", "partition")
CLIENT_STATS_SCHEMA = pa.schema([
    pa.field("t_ns", pa.int64(), nullable=False),
    pa.field("process", pa.int32(), nullable=False),
    pa.field("producer", pa.string(), nullable=False),
    pa.field("client", pa.string(), nullable=False),          # librdkafka or java
    pa.field("scope", pa.string(), nullable=False),           # client, broker or partition
    pa.field("broker", pa.int32(), nullable=True),            # broker rows: its node id
    pa.field("partition", pa.int32(), nullable=True),         # partition rows
    pa.field("leader", pa.int32(), nullable=True),            # partition rows: the leader as the client sees it
    pa.field("state", pa.string(), nullable=True),            # broker rows: UP, DOWN, CONNECT, ...
    pa.field("state_age_ms", pa.int64(), nullable=True),
    pa.field("waitresp_cnt", pa.int64(), nullable=True),      # requests in flight awaiting a response
    pa.field("outbuf_cnt", pa.int64(), nullable=True),        # requests awaiting transmission
    pa.field("req_timeouts", pa.int64(), nullable=True),      # requests timed out so far
    pa.field("txretries", pa.int64(), nullable=True),         # request retries so far
    pa.field("rtt_avg_us", pa.int64(), nullable=True),
    pa.field("msgq_cnt", pa.int64(), nullable=True),          # messages queued (client: all; partition: its own)
    pa.field("msg_max", pa.int64(), nullable=True),           # the client's queue limit
    pa.field("msgs_inflight", pa.int64(), nullable=True),
    pa.field("metadata_age_ms", pa.int64(), nullable=True),
    pa.field("buffer_available_bytes", pa.int64(), nullable=True),   # Java: free bytes of buffer.memory
])

ANOMALIES_SCHEMA = pa.schema([
    pa.field("kind", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=True),
    pa.field("offset", pa.int64(), nullable=True),
    pa.field("value", pa.string(), nullable=True),
    pa.field("producer", pa.string(), nullable=True),
    pa.field("op_id", pa.int64(), nullable=True),
    pa.field("t_invoke_ns", pa.int64(), nullable=True),
    pa.field("t_complete_ns", pa.int64(), nullable=True),
    pa.field("t_read_ns", pa.int64(), nullable=True),
    pa.field("classification", pa.string(), nullable=False),
    pa.field("durability", pa.string(), nullable=True),
    pa.field("reason", pa.string(), nullable=False),
    # An allowed instance's excuse (checkers.excuses): the rule, and the event it blames by id and time.
    pa.field("excuse", pa.string(), nullable=True),
    pa.field("cause_id", pa.string(), nullable=True),
    pa.field("cause_t_ns", pa.int64(), nullable=True),
])

# File name (relative to the results directory) -> schema, and whether the file must exist.
HISTORY_FILES = {
    "history/sends.parquet": (SENDS_SCHEMA, True),
    "history/reads.parquet": (READS_SCHEMA, True),
    "history/faults.parquet": (FAULTS_SCHEMA, False),
    "history/cluster.parquet": (CLUSTER_SCHEMA, False),
    "history/group.parquet": (GROUP_SCHEMA, False),
    "history/txns.parquet": (TXNS_SCHEMA, False),
    "history/client_stats.parquet": (CLIENT_STATS_SCHEMA, False),
    "history/eos.parquet": (EOS_SCHEMA, False),
    "history/lso.parquet": (LSO_SCHEMA, False),
}

META_REQUIRED = {"run_id": str, "partitions": int, "replication_factor": int, "min_insync_replicas": int}

# Anomaly kinds in the order verdict.json lists them, each declared once in history/kinds.py. `recovered` is counted
# but never a violation; `stall` is observed unavailability, a violation only beyond a bound the user asked for.
ANOMALY_KINDS = tuple(KINDS)
