"""Build the history's Parquet files from the journals (at the end of a run, or to repair a crashed one).

Parsing uses Arrow's CSV reader (tab-separated, no quoting), so a 60 s run of a million sends builds in seconds.
A send's invoke and completion lines are joined on its value; a send without a completion (its worker died, or
the harness did before the report came) is `info` with a null t_complete_ns, as docs/history.md says.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from kafka_chaos.base.errors import HarnessError
from kafka_chaos.history.eos import eos_table
from kafka_chaos.history.journal import (
    CLUSTER_FILE,
    COMPLETE_COLUMNS,
    FAULTS_FILE,
    GROUP_COLUMNS,
    INVOKE_COLUMNS,
    NULL,
    READ_COLUMNS,
    TXN_COLUMNS,
    complete_lines,
    unesc,
)
from kafka_chaos.history.schema import (
    CLIENT_STATS_SCHEMA,
    CLUSTER_SCHEMA,
    FAULTS_SCHEMA,
    GROUP_SCHEMA,
    LSO_SCHEMA,
    READS_SCHEMA,
    SENDS_SCHEMA,
    TXNS_SCHEMA,
)

log = logging.getLogger(__name__)

INVOKE_TYPES = {"value": pa.string(), "key": pa.string(), "partition": pa.int32(), "t_invoke_ns": pa.int64()}
COMPLETE_TYPES = {"value": pa.string(), "outcome": pa.string(), "error": pa.string(), "partition": pa.int32(),
                  "offset": pa.int64(), "t_complete_ns": pa.int64()}
ESCAPED_COLUMNS = {"key", "value"}    # the only free text; outcome and error names never need escaping
READ_TYPES = {"seq": pa.int64(), "partition": pa.int32(), "offset": pa.int64(), "key": pa.string(),
              "value": pa.string(), "t_ns": pa.int64()}
TXN_TYPES = {"txn": pa.int64(), "first_seq": pa.int64(), "count": pa.int32(), "outcome": pa.string(),
             "error": pa.string(), "t_ns": pa.int64()}
GROUP_TYPES = {"event": pa.string(), "partition": pa.int32(), "offset": pa.int64(), "error": pa.string(),
               "t_ns": pa.int64()}


class JournalError(HarnessError):
    """A journal that cannot be turned into a history."""

    def __init__(self, cause: str):
        super().__init__(cause, "the journal under history/journal/ is damaged beyond its last line; "
                                "inspect it, or rerun the test")


@dataclass
class HistorySummary:
    sends: int = 0
    ok: int = 0
    fail: int = 0
    info: int = 0
    without_outcome: int = 0    # sends whose completion was never journaled (now info)
    reads: int = 0
    final_reads: int = 0
    faults: int = 0
    cluster_samples: int = 0

    def __str__(self) -> str:
        return (f"{self.sends} sends ({self.ok} ok, {self.fail} fail, {self.info} info, of which "
                f"{self.without_outcome} without a report), {self.reads} live reads, {self.final_reads} final "
                f"reads, {self.faults} fault events, {self.cluster_samples} cluster samples")


# ---- reading journals ------------------------------------------------------------------------------------------
def read_tsv(path: Path, columns: tuple[str, ...], types: dict[str, pa.DataType]) -> pa.Table:
    """A journal's complete lines as a table; a missing file is an empty table."""
    empty = pa.table({c: pa.array([], types[c]) for c in columns})
    if not path.exists():
        return empty
    data = complete_lines(path.read_bytes())
    if not data:
        return empty
    try:
        table = pacsv.read_csv(
            pa.BufferReader(data),
            read_options=pacsv.ReadOptions(column_names=list(columns), block_size=1 << 24),
            parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False, escape_char=False),
            convert_options=pacsv.ConvertOptions(column_types=types, null_values=[NULL], strings_can_be_null=True,
                                                 quoted_strings_can_be_null=False))
    except pa.ArrowInvalid as e:
        raise JournalError(f"{path}: {e}") from None
    for name in ESCAPED_COLUMNS.intersection(columns):
        table = _unescape_column(table, name)
    return table


def _unescape_column(table: pa.Table, name: str) -> pa.Table:
    col = table[name]
    if not pc.any(pc.match_substring(col, "\\")).as_py():
        return table
    fixed = pa.array([None if v is None else unesc(v) for v in col.to_pylist()], pa.string())
    return table.set_column(table.schema.get_field_index(name), name, fixed)


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    lines = complete_lines(path.read_bytes()).decode().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def sidecars(journal_dir: Path, prefix: str) -> list[tuple[Path, dict]]:
    out = []
    for p in sorted(journal_dir.glob(f"{prefix}-*.json")):
        try:
            out.append((p, json.loads(p.read_text())))
        except json.JSONDecodeError as e:
            raise JournalError(f"{p}: not valid JSON ({e})") from None
    return out


# ---- tables ----------------------------------------------------------------------------------------------------
def sends_table(journal_dir: Path) -> tuple[pa.Table, int]:
    """sends.parquet's table, and how many sends had no completion line."""
    parts, missing = [], 0
    for side, info in sidecars(journal_dir, "producer"):
        stem = side.with_suffix("")
        invokes = read_tsv(Path(f"{stem}.invoke.tsv"), INVOKE_COLUMNS, INVOKE_TYPES)
        completes = read_tsv(Path(f"{stem}.complete.tsv"), COMPLETE_COLUMNS, COMPLETE_TYPES)
        invokes = invokes.append_column("_row", pa.array(np.arange(invokes.num_rows, dtype=np.int64)))
        completes = completes.rename_columns(["value", "outcome", "error", "dr_partition", "offset",
                                              "t_complete_ns"])
        joined = invokes.join(completes, keys="value", join_type="left outer")
        if joined.num_rows != invokes.num_rows:     # a value with two completion lines (never expected)
            log.warning("%s.complete.tsv: a send has two outcomes; keeping the first", stem)
            joined = invokes.join(_first_per_value(completes), keys="value", join_type="left outer")
        n = joined.num_rows
        missing += joined["outcome"].null_count
        joined = joined.append_column("process", pa.array([int(info["process"])] * n, pa.int32()))
        joined = joined.append_column("producer", pa.array([info["producer"]] * n, pa.string()))
        joined = joined.append_column("acks", pa.array([str(info["acks"])] * n, pa.string()))
        joined = joined.append_column("idempotent", pa.array([bool(info["idempotent"])] * n, pa.bool_()))
        parts.append(joined)
    if not parts:
        return SENDS_SCHEMA.empty_table(), 0
    t = pa.concat_tables(parts).sort_by([("t_invoke_ns", "ascending"), ("process", "ascending"),
                                         ("_row", "ascending")])
    if pc.count_distinct(t["value"]).as_py() != t.num_rows:
        raise JournalError(f"{journal_dir}: a value was sent twice (values must be unique in a run)")
    columns = {
        "op_id": pa.array(np.arange(t.num_rows, dtype=np.int64)),
        "process": t["process"], "producer": t["producer"], "acks": t["acks"], "idempotent": t["idempotent"],
        "key": t["key"], "value": t["value"],
        "partition": pc.coalesce(t["dr_partition"], t["partition"]),
        "offset": t["offset"],
        "outcome": pc.coalesce(t["outcome"], pa.scalar("info")),
        "error": t["error"],
        "t_invoke_ns": t["t_invoke_ns"], "t_complete_ns": t["t_complete_ns"],
    }
    return _conform(pa.table(columns), SENDS_SCHEMA, "sends"), missing


def _first_per_value(table: pa.Table) -> pa.Table:
    seen, keep = set(), []
    for i, v in enumerate(table["value"].to_pylist()):
        if v not in seen:
            seen.add(v)
            keep.append(i)
    return table.take(pa.array(keep))


def reads_table(journal_dir: Path) -> pa.Table:
    parts = []
    for side, info in sidecars(journal_dir, "reads"):
        t = read_tsv(side.with_suffix(".tsv"), READ_COLUMNS, READ_TYPES)
        n = t.num_rows
        t = t.append_column("consumer", pa.array([info["consumer"]] * n, pa.string()))
        t = t.append_column("phase", pa.array([info["phase"]] * n, pa.string()))
        parts.append(t)
    if not parts:
        return READS_SCHEMA.empty_table()
    return _conform(pa.concat_tables(parts), READS_SCHEMA, "reads")


def faults_table(journal_dir: Path) -> pa.Table:
    rows = read_jsonl(journal_dir / FAULTS_FILE)
    return _conform(pa.Table.from_pylist(rows, schema=FAULTS_SCHEMA), FAULTS_SCHEMA, "faults")


def cluster_table(journal_dir: Path) -> pa.Table:
    rows = read_jsonl(journal_dir / CLUSTER_FILE)
    return _conform(pa.Table.from_pylist(rows, schema=CLUSTER_SCHEMA), CLUSTER_SCHEMA, "cluster")


def lso_table(journal_dir: Path) -> pa.Table:
    """lso.parquet's table: the samples' last stable offsets beside their high watermarks (only samples that read
    one: a transactional workload's sampler)."""
    rows = [r for r in read_jsonl(journal_dir / CLUSTER_FILE) if r.get("last_stable_offset") is not None]
    return _conform(pa.Table.from_pylist(rows, schema=LSO_SCHEMA), LSO_SCHEMA, "lso")


def group_table(journal_dir: Path) -> pa.Table:
    """group.parquet's table: every subscribe-mode consumer's assignments, revocations and commits."""
    parts = []
    for side, info in sidecars(journal_dir, "group"):
        t = read_tsv(side.with_suffix(".tsv"), GROUP_COLUMNS, GROUP_TYPES)
        parts.append(t.append_column("consumer", pa.array([info["consumer"]] * t.num_rows, pa.string())))
    if not parts:
        return GROUP_SCHEMA.empty_table()
    return _conform(pa.concat_tables(parts).sort_by([("t_ns", "ascending")]), GROUP_SCHEMA, "group")


def txns_table(journal_dir: Path) -> pa.Table:
    """txns.parquet's table: every transaction of every transactional producer."""
    parts = []
    for side, info in sidecars(journal_dir, "producer"):
        t = read_tsv(Path(f"{side.with_suffix('')}.txn.tsv"), TXN_COLUMNS, TXN_TYPES)
        t = t.append_column("process", pa.array([int(info["process"])] * t.num_rows, pa.int32()))
        parts.append(t.append_column("producer", pa.array([info["producer"]] * t.num_rows, pa.string())))
    if not parts:
        return TXNS_SCHEMA.empty_table()
    return _conform(pa.concat_tables(parts), TXNS_SCHEMA, "txns")


def client_stats_table(journal_dir: Path) -> pa.Table:
    """client_stats.parquet's table: every producer's statistics rows, with the producer and its client."""
    rows = []
    for side, info in sidecars(journal_dir, "producer"):
        extra = {"process": int(info["process"]), "producer": info["producer"],
                 "client": (info.get("profile") or {}).get("client") or "librdkafka"}
        rows.extend(r | extra for r in read_jsonl(Path(f"{side.with_suffix('')}.stats.jsonl")))
    if not rows:
        return CLIENT_STATS_SCHEMA.empty_table()
    table = pa.Table.from_pylist(rows, schema=CLIENT_STATS_SCHEMA)
    return _conform(table.sort_by([("t_ns", "ascending"), ("process", "ascending")]), CLIENT_STATS_SCHEMA,
                    "client_stats")


def _conform(table: pa.Table, schema: pa.Schema, what: str) -> pa.Table:
    """`table` with exactly `schema`'s columns and types; a null in a non-nullable column is a journal error."""
    table = table.select(schema.names)
    for f in schema:
        if not f.nullable and table[f.name].null_count:
            raise JournalError(f"{what}: column {f.name} has {table[f.name].null_count} nulls; it never may")
    return pa.Table.from_arrays([table[f.name].cast(f.type) for f in schema], schema=schema)


# ---- writing ---------------------------------------------------------------------------------------------------
def write_parquet(table: pa.Table, path: Path) -> None:
    """Atomically: a crash while writing never leaves a half file under the final name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)


def build_history(run_dir: Path) -> HistorySummary:
    """Write history/{sends,reads,faults,cluster}.parquet from history/journal/. Faults and cluster only if any,
    and group, txns, client_stats, eos and lso likewise."""
    history = Path(run_dir) / "history"
    journal = history / "journal"
    if not journal.is_dir():
        raise JournalError(f"{journal}: no journal here, so there is nothing to build a history from")
    sends, missing = sends_table(journal)
    reads = reads_table(journal)
    faults = faults_table(journal)
    cluster = cluster_table(journal)
    group = group_table(journal)
    txns = txns_table(journal)
    stats = client_stats_table(journal)
    eos, lso = eos_table(journal), lso_table(journal)
    write_parquet(sends, history / "sends.parquet")
    write_parquet(reads, history / "reads.parquet")
    for table, name in ((faults, "faults.parquet"), (cluster, "cluster.parquet"), (group, "group.parquet"),
                        (txns, "txns.parquet"), (stats, "client_stats.parquet"), (eos, "eos.parquet"),
                        (lso, "lso.parquet")):
        if table.num_rows:
            write_parquet(table, history / name)
        elif (history / name).exists():
            (history / name).unlink()
    outcomes = pc.value_counts(sends["outcome"]).to_pylist()
    counts = {d["values"]: d["counts"] for d in outcomes}
    phases = {d["values"]: d["counts"] for d in pc.value_counts(reads["phase"]).to_pylist()}
    return HistorySummary(sends=sends.num_rows, ok=counts.get("ok", 0), fail=counts.get("fail", 0),
                          info=counts.get("info", 0), without_outcome=missing, reads=phases.get("live", 0),
                          final_reads=phases.get("final", 0), faults=faults.num_rows,
                          cluster_samples=cluster.num_rows)
