"""Append-only journals under history/journal/: the crash-safe record the Parquet files are built from.

One set of files per worker, so no two processes write one file. Lines are tab-separated, buffered in memory and
written + flushed (to the OS: a killed process loses nothing flushed) by `flush()`, which workers call several times
a second. A crash can leave a partial last line; readers drop it. Each journal has a JSON sidecar naming its
writer (process, producer, acks, consumer, phase), so the data lines carry only what varies.

Files (N = producer process index, NAME = consumer name):
  producer-N.json           {"kind": "sends", "process", "producer", "acks", "idempotent", "profile"}
  producer-N.invoke.tsv     value, key, partition, t_invoke_ns               one line per produce() call
  producer-N.complete.tsv   value, outcome, error, partition, offset, t_complete_ns   one per outcome
  producer-N.txn.tsv        txn, first_seq, count, outcome, error, t_ns: one per transaction (--transactions)
  producer-N.progress       "invoked ok fail info": the worker's own counters, as of its last flush
  producer-N.stats.jsonl    the client's own statistics, a few JSON rows a second (workloads/client_stats.py)
  reads-NAME.json           {"kind": "reads", "consumer", "phase"}
  reads-NAME.tsv            seq, partition, offset, key, value, t_ns
  group-NAME.json           {"kind": "group", "consumer", "commit_mode"}     (subscribe mode only)
  group-NAME.tsv            event, partition, offset, error, t_ns: assigned / revoked / commit
  faults.jsonl              one JSON object per fault event
  cluster.jsonl             one JSON object per partition per state sample
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

NULL = "\\N"

INVOKE_COLUMNS = ("value", "key", "partition", "t_invoke_ns")
COMPLETE_COLUMNS = ("value", "outcome", "error", "partition", "offset", "t_complete_ns")
READ_COLUMNS = ("seq", "partition", "offset", "key", "value", "t_ns")
GROUP_COLUMNS = ("event", "partition", "offset", "error", "t_ns")
TXN_COLUMNS = ("txn", "first_seq", "count", "outcome", "error", "t_ns")
FAULTS_FILE = "faults.jsonl"
CLUSTER_FILE = "cluster.jsonl"


def esc(s: str | None) -> str:
    """A field as a journal writes it: NULL for None, backslash escapes for tab, newline and backslash."""
    if s is None:
        return NULL
    if "\\" in s or "\t" in s or "\n" in s or "\r" in s:
        return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return s


def unesc(s: str) -> str | None:
    """Inverse of esc()."""
    if s == NULL:
        return None
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            out.append({"t": "\t", "n": "\n", "r": "\r"}.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def producer_paths(journal_dir: Path, process: int) -> dict[str, Path]:
    stem = Path(journal_dir) / f"producer-{process}"
    return {"sidecar": stem.with_suffix(".json"), "invoke": Path(f"{stem}.invoke.tsv"),
            "complete": Path(f"{stem}.complete.tsv"), "progress": stem.with_suffix(".progress"),
            "stats": Path(f"{stem}.stats.jsonl")}


def reads_paths(journal_dir: Path, consumer: str) -> dict[str, Path]:
    stem = Path(journal_dir) / f"reads-{consumer}"
    return {"sidecar": stem.with_suffix(".json"), "data": stem.with_suffix(".tsv")}


def txn_path(journal_dir: Path, process: int) -> Path:
    return Path(journal_dir) / f"producer-{process}.txn.tsv"


def group_paths(journal_dir: Path, consumer: str) -> dict[str, Path]:
    stem = Path(journal_dir) / f"group-{consumer}"
    return {"sidecar": stem.with_suffix(".json"), "data": stem.with_suffix(".tsv")}


def write_sidecar(path: Path, info: dict) -> None:
    write_atomic(path, json.dumps(info, sort_keys=True))


def write_atomic(path: Path, text: str) -> None:
    tmp = Path(f"{path}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class LineJournal:
    """A worker's buffered journal file. Append to `lines` (a list of newline-terminated strings), call flush().

    Not thread-safe: one writer per file, appending from one thread.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._file = open(self.path, "a", encoding="utf-8", newline="", buffering=1 << 20)
        self.lines: list[str] = []

    def flush(self) -> None:
        if self.lines:
            self._file.write("".join(self.lines))
            self.lines.clear()
        self._file.flush()

    def close(self) -> None:
        self.flush()
        self._file.close()


class EventJournal:
    """JSON lines written and flushed one by one, from any thread: low-rate events (faults, state samples)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._file = open(self.path, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def append(self, *records: dict) -> None:
        text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
        with self._lock:
            if not self._file.closed:
                self._file.write(text)
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def complete_lines(data: bytes) -> bytes:
    """`data` up to its last newline: what a crashed writer finished."""
    end = data.rfind(b"\n")
    return data[:end + 1] if end >= 0 else b""


def read_progress(path: Path) -> dict[str, int] | None:
    """A producer's own counters as of its last flush (None if it never flushed)."""
    try:
        invoked, ok, fail, info = (int(x) for x in Path(path).read_text().split())
    except (FileNotFoundError, ValueError):
        return None
    return {"invoked": invoked, "ok": ok, "fail": fail, "info": info}


def write_progress(path: Path, invoked: int, ok: int, fail: int, info: int) -> None:
    write_atomic(path, f"{invoked} {ok} {fail} {info}\n")
