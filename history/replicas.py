"""The replica audit's files (docs/history.md, "history/replicas.parquet"): each replica's log of the topic under
test, read from its own files at the end of a run, record by record, and each replica's state beside it.

Built from the bytes of a partition directory (`<topic>-<p>/`: its `*.log` segments and `leader-epoch-checkpoint`)
and the log dir's `replication-offset-checkpoint` and `log-start-offset-checkpoint`; the segments are parsed by
history/record_batch.py. The checkpoint files are Kafka's CheckpointFile text: a version line (0), a count line,
then one entry per line: `topic partition offset` (OffsetCheckpointFile), or `epoch startOffset` for the
leader-epoch checkpoint (LeaderEpochCheckpointFile). Reading them out of the brokers is the cluster's job
(cluster/replica_files.py); the checker (checkers/replica_audit.py) reads only what this module writes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_chaos.history.record_batch import Batch, control_type, read_batches

REPLICAS_FILE = "history/replicas.parquet"
REPLICA_LOGS_FILE = "history/replica_logs.parquet"

REPLICAS_SCHEMA = pa.schema([
    pa.field("broker", pa.int32(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64(), nullable=False),
    pa.field("batch_offset", pa.int64(), nullable=False),
    pa.field("leader_epoch", pa.int32(), nullable=False),
    pa.field("producer_id", pa.int64(), nullable=False),
    pa.field("producer_epoch", pa.int32(), nullable=False),
    pa.field("sequence", pa.int32(), nullable=False),
    pa.field("is_control", pa.bool_(), nullable=False),
    pa.field("is_transactional", pa.bool_(), nullable=False),
    pa.field("crc_ok", pa.bool_(), nullable=False),
    pa.field("digest", pa.string(), nullable=False),
    pa.field("value", pa.string(), nullable=True),
])

REPLICA_LOGS_SCHEMA = pa.schema([
    pa.field("t_ns", pa.int64(), nullable=False),
    pa.field("broker", pa.int32(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("leader", pa.bool_(), nullable=False),
    pa.field("in_isr", pa.bool_(), nullable=False),
    pa.field("hw", pa.int64(), nullable=True),
    pa.field("checkpoint_hw", pa.int64(), nullable=True),
    pa.field("log_start_offset", pa.int64(), nullable=True),
    pa.field("log_end_offset", pa.int64(), nullable=True),
    pa.field("records", pa.int64(), nullable=False),
    pa.field("segments", pa.int32(), nullable=False),
    pa.field("epochs", pa.list_(pa.int32()), nullable=True),
    pa.field("epoch_start_offsets", pa.list_(pa.int64()), nullable=True),
    pa.field("torn_bytes", pa.int64(), nullable=False),
    pa.field("undecoded", pa.string(), nullable=True),
    pa.field("error", pa.string(), nullable=True),
    pa.field("note", pa.string(), nullable=True),
])


def offset_checkpoint(text: str | None, topic: str) -> dict[int, int]:
    """{partition: offset} of `topic` in an OffsetCheckpointFile's text (empty where absent or unreadable)."""
    out: dict[int, int] = {}
    lines = (text or "").splitlines()
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] == topic and parts[1].lstrip("-").isdigit() and parts[2].lstrip("-").isdigit():
            out[int(parts[1])] = int(parts[2])
    return out


def epoch_checkpoint(text: str | None) -> list[tuple[int, int]] | None:
    """[(epoch, start offset)] of a leader-epoch-checkpoint's text; None where absent."""
    if text is None:
        return None
    out = []
    for line in text.splitlines()[2:]:
        parts = line.split()
        if len(parts) == 2 and all(p.lstrip("-").isdigit() for p in parts):
            out.append((int(parts[0]), int(parts[1])))
    return out


@dataclass
class ReplicaFiles:
    """What one replica's files held: the partition directory's files by name, the log dir's checkpoints."""
    broker: int
    partition: int
    files: dict[str, bytes] = field(default_factory=dict)
    replication_checkpoint: str | None = None
    log_start_checkpoint: str | None = None
    error: str | None = None            # why the files could not be read (None: read)


@dataclass
class ReplicaState:
    """The cluster's word on a replica at the audit: leader, in the ISR, the partition's high watermark."""
    leader: bool
    in_isr: bool
    hw: int | None
    note: str | None = None


def _value(record, batch: Batch) -> str | None:
    if batch.is_control:
        return control_type(record)
    return None if record.value is None else record.value.decode(errors="replace")


def _rows(batch: Batch, broker: int, partition: int, cols: dict[str, list]) -> int:
    """Append one row per record of the batch (per offset of an undecoded one: its batch CRC as digest)."""
    if batch.records is None:
        deltas = list(range(batch.last_offset_delta + 1))
        digests, values = [f"batch-crc:{batch.crc:08x}"] * len(deltas), [None] * len(deltas)
    else:
        deltas = [r.offset_delta for r in batch.records]
        digests = [r.digest() for r in batch.records]
        values = [_value(r, batch) for r in batch.records]
    n = len(deltas)
    cols["offset"].extend(batch.base_offset + d for d in deltas)
    cols["sequence"].extend(batch.sequence(d) for d in deltas)
    cols["digest"].extend(digests)
    cols["value"].extend(values)
    for name, v in (("broker", broker), ("partition", partition), ("batch_offset", batch.base_offset),
                    ("leader_epoch", batch.leader_epoch), ("producer_id", batch.producer_id),
                    ("producer_epoch", batch.producer_epoch), ("is_control", batch.is_control),
                    ("is_transactional", batch.is_transactional), ("crc_ok", batch.crc_ok)):
        cols[name].extend([v] * n)
    return n


def replica_tables(replicas: list[tuple[ReplicaFiles, ReplicaState]], topic: str, t_ns: int) -> tuple[pa.Table,
                                                                                                     pa.Table]:
    """(replicas.parquet's table, replica_logs.parquet's table) of the replicas read."""
    cols: dict[str, list] = {f.name: [] for f in REPLICAS_SCHEMA}
    logs: dict[str, list] = {f.name: [] for f in REPLICA_LOGS_SCHEMA}
    for files, state in replicas:
        summary = _replica(files, topic, cols)
        row = {"t_ns": t_ns, "broker": files.broker, "partition": files.partition, "leader": state.leader,
               "in_isr": state.in_isr, "hw": state.hw, "note": state.note, "error": files.error, **summary}
        for name in logs:
            logs[name].append(row.get(name))
    return (pa.Table.from_pydict(cols, schema=REPLICAS_SCHEMA),
            pa.Table.from_pydict(logs, schema=REPLICA_LOGS_SCHEMA))


def _replica(files: ReplicaFiles, topic: str, cols: dict[str, list]) -> dict:
    """Append the replica's records to cols; its summary columns."""
    epochs = epoch_checkpoint(files.files.get("leader-epoch-checkpoint", b"").decode(errors="replace")
                              if "leader-epoch-checkpoint" in files.files else None)
    segments = sorted((n for n in files.files if n.endswith(".log") and n[:-4].isdigit()), key=lambda n: int(n[:-4]))
    records, torn, undecoded, first, end = 0, 0, None, None, None
    for name in segments:
        data = files.files[name]
        batches = read_batches(data)
        used = batches[-1].position + 12 + batches[-1].length if batches else 0
        torn += len(data) - used
        for b in batches:
            records += _rows(b, files.broker, files.partition, cols)
            first = b.base_offset if first is None else first
            end = b.last_offset + 1
            if b.undecoded and undecoded is None:
                undecoded = f"{name} at byte {b.position} (offset {b.base_offset}): {b.undecoded}"
    log_start = offset_checkpoint(files.log_start_checkpoint, topic).get(files.partition, first)
    return {"checkpoint_hw": offset_checkpoint(files.replication_checkpoint, topic).get(files.partition),
            "log_start_offset": log_start, "log_end_offset": end, "records": records, "segments": len(segments),
            "epochs": None if epochs is None else [e for e, _ in epochs],
            "epoch_start_offsets": None if epochs is None else [o for _, o in epochs],
            "torn_bytes": torn, "undecoded": undecoded}


def write_replicas(run_dir: Path | str, tables: tuple[pa.Table, pa.Table]) -> None:
    from kafka_chaos.history.build import write_parquet

    write_parquet(tables[0], Path(run_dir) / REPLICAS_FILE)
    write_parquet(tables[1], Path(run_dir) / REPLICA_LOGS_FILE)


def read_replicas(run_dir: Path | str):
    """(records, replica logs) as pandas frames; None where the run has no audit (a run before it, or one whose
    audit did not run: absence is no failure)."""
    run_dir = Path(run_dir)
    if not (run_dir / REPLICA_LOGS_FILE).exists():
        return None
    logs = pq.read_table(run_dir / REPLICA_LOGS_FILE).to_pandas()
    path = run_dir / REPLICAS_FILE
    records = pq.read_table(path).to_pandas() if path.exists() else REPLICAS_SCHEMA.empty_table().to_pandas()
    return records, logs
