"""The exactly-once workload's part of the history contract (`--workload eos`, docs/history.md "history/eos.parquet").

Shared by the processors that write it (workloads/eos.py) and the checker that judges it (checkers/eos.py), which
must agree on three things without importing each other:
- the seeded input: record i of input partition p holds `input_value(seed, p, i)` at offset i (one idempotent
  producer writes it before the faults start; the workload verifies the offsets);
- the transform: the output of the input record at (p, o) is written to output partition p with the value
  `output_value(...)`: a deterministic function of the record (`payload`) and, after `@`, which processor and
  transaction wrote this copy (values are unique in a run: sends.parquet's rule);
- the journal line of one transaction (`txn_line`, parsed by `eos_table`).

Journal files (NAME = processor name, e.g. `e0`, `e1-r1`):
  eos-NAME.json   {"kind": "eos", "processor": NAME, "process": N}
  eos-NAME.tsv    txn, outcome, error, reads, writes, commits, t_begin_ns, t_commit_ns, t_end_ns
where reads, writes and commits are `p:o` pairs joined by commas (a write whose offset is unknown is `p:`).
"""
from __future__ import annotations

import json
import zlib
from pathlib import Path

import pyarrow as pa

from kafka_chaos.history.journal import NULL, complete_lines
from kafka_chaos.history.schema import EOS_SCHEMA

EOS_FILE = "history/eos.parquet"
INPUT_SUFFIX = "-in"          # the input topic is the output topic's name + this
OUTCOMES = ("committed", "aborted", "unknown")
# How late the coordinator may abort a transaction open past its timeout: it looks for them every
# transaction.abort.timed.out.transaction.cleanup.interval.ms (a broker setting, 10 s by default:
# TransactionStateManagerConfig; TransactionCoordinator.abortTimedOutTransactions, scheduled at that interval over
# TransactionStateManager.timedOutTransactions: Ongoing and txnStartTimestamp + txnTimeoutMs < now), then writes the
# ABORT markers to every partition of it (WriteTxnMarkers, up to the brokers' request.timeout.ms). The workload
# (its final drain's wait) and checkers/lso.py (lso_stuck) use the same bound.
ABORT_INTERVAL_MS = 10000
MARKER_SLACK_MS = 5000


def abort_bound_ms(transaction_timeout_ms: int, abort_interval_ms: int = ABORT_INTERVAL_MS) -> int:
    """The longest an open transaction can hold a partition's LSO after it began, by the coordinator's rules."""
    return transaction_timeout_ms + abort_interval_ms + MARKER_SLACK_MS


def input_topic(topic: str) -> str:
    return topic + INPUT_SUFFIX


def input_value(seed: int, partition: int, index: int) -> str:
    return f"x{seed}-{partition}-{index}"


def payload(partition: int, offset: int, value: str) -> str:
    """The deterministic transform of the input record at (partition, offset) holding `value`."""
    return f"{partition}-{offset}-{zlib.crc32(value.encode()):08x}"


def output_value(partition: int, offset: int, value: str, processor: str, txn: int) -> str:
    return f"{payload(partition, offset, value)}@{processor}.{txn}"


def pairs(items) -> str:
    return ",".join(f"{p}:{'' if o is None else o}" for p, o in items)


def txn_line(txn: int, outcome: str, error: str | None, reads, writes, commits, t_begin: int, t_commit: int | None,
             t_end: int) -> str:
    return (f"{txn}\t{outcome}\t{error or NULL}\t{pairs(reads)}\t{pairs(writes)}\t{pairs(commits)}\t{t_begin}\t"
            f"{NULL if t_commit is None else t_commit}\t{t_end}\n")


def _split(text: str) -> tuple[list[int], list[int | None]]:
    ps, os_ = [], []
    for item in text.split(",") if text else ():
        p, _, o = item.partition(":")
        ps.append(int(p))
        os_.append(int(o) if o else None)
    return ps, os_


def eos_table(journal_dir: Path) -> pa.Table:
    """eos.parquet's table from every processor's journal (complete lines only); empty without any."""
    cols: dict[str, list] = {f.name: [] for f in EOS_SCHEMA}
    for side in sorted(Path(journal_dir).glob("eos-*.json")):
        info = json.loads(side.read_text())
        data = side.with_suffix(".tsv")
        if not data.exists():
            continue
        for line in complete_lines(data.read_bytes()).decode().splitlines():
            f = line.split("\t")
            if len(f) != 9:
                continue
            rp, ro = _split(f[3])
            wp, wo = _split(f[4])
            cp, co = _split(f[5])
            row = {"processor": info["processor"], "process": int(info["process"]), "txn": int(f[0]),
                   "outcome": f[1], "error": None if f[2] == NULL else f[2], "read_partitions": rp,
                   "read_offsets": ro, "write_partitions": wp, "write_offsets": wo, "commit_partitions": cp,
                   "commit_offsets": co, "t_begin_ns": int(f[6]), "t_commit_ns": None if f[7] == NULL else int(f[7]),
                   "t_end_ns": int(f[8])}
            for k, v in row.items():
                cols[k].append(v)
    return pa.table(cols, schema=EOS_SCHEMA)
