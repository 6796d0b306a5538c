"""What the results index shows of each run: one row from its meta.json and verdict.json, and where the runs are.

A results root holds runs (root/<run_id>/) and suites (root/<suite>/<run_id>/, e.g. one night's downloaded
artifact); nothing deeper is listed. A row is built from the two small JSON files alone (`row_from`), so it is the
same for a local root and an object store; a local run without a verdict falls back on its sends' Parquet footer
for the send count and time range.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import quote

import pyarrow.parquet as pq

from kafka_chaos.base.names import is_run_id, within
from kafka_chaos.history.layout import REPORT_FILE, is_run_dir, sends_path

log = logging.getLogger(__name__)
STATES = ("valid", "invalid", "incomplete", "unchecked", "broken")


@dataclass
class IndexRow:
    """One run as the index shows it; the fields the page filters on are plain strings."""

    run_id: str
    suite: str                  # "" for a run directly under the root
    scenario: str
    kafka_version: str
    metadata_mode: str
    client: str                 # librdkafka, java, or both joined by "+"
    acks: str                   # the producers' levels, e.g. "all" or "1+all"
    min_isr: str
    settings: str
    state: str                  # one of STATES
    verdict: str
    lost: str                   # observed lost / the model's prediction
    duplicates: str
    stalls: str                 # stalls over the threshold, and the longest
    duration: str
    sends: str
    started: str
    start_ns: int
    report_href: str | None
    lost_n: int | None = None
    seed: int | None = None
    extra: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Located:
    """A run found under the root: its directory and the suite it belongs to."""

    path: Path
    suite: str = ""


def locate_runs(root: Path) -> tuple[list[Located], list[str]]:
    """The runs directly under `root` and one level down (suites), never beyond it; and the suites' names.
    A name that is not a valid run id, or a symlink leading out of the root, is skipped with a warning."""
    runs: list[Located] = []
    suites: list[str] = []
    for entry in _children(root, root):
        if is_run_dir(entry):
            runs.append(Located(entry))
            continue
        inner = [Located(d, entry.name) for d in _children(entry, root) if is_run_dir(d)]
        if inner:
            suites.append(entry.name)
            runs.extend(inner)
    return runs, suites


def _children(directory: Path, root: Path) -> list[Path]:
    out = []
    for entry in sorted(directory.iterdir()):
        if not entry.is_dir():
            continue
        if not is_run_id(entry.name):
            log.warning("index: skipping %s (not a valid run or suite name)", entry)
            continue
        if within(root, entry) is None:
            log.warning("index: skipping %s (it leads out of %s)", entry, root)
            continue
        out.append(entry)
    return out


def local_row(root: Path, located: Located) -> IndexRow:
    run_dir = located.path
    meta, verdict = _json_or_none(run_dir / "meta.json"), _json_or_none(run_dir / "verdict.json")
    has_history = sends_path(run_dir).is_file()
    footer = _sends_footer(run_dir) if has_history and verdict is None else (None, None, None)
    href = None
    if (run_dir / REPORT_FILE).is_file():
        href = "/".join(quote(p) for p in (located.suite, run_dir.name, REPORT_FILE) if p)
    broken = verdict is None and (run_dir / "verdict.json").is_file()
    return row_from(run_dir.name, located.suite, meta or {}, verdict, has_history=has_history,
                    report_href=href, footer=footer, verdict_unreadable=broken)


def row_from(name: str, suite: str, meta: dict, verdict: dict | None, *, has_history: bool,
             report_href: str | None, footer: tuple = (None, None, None),
             verdict_unreadable: bool = False) -> IndexRow:
    """The row of one run from its meta.json and verdict.json objects (either may be empty or absent)."""
    v = verdict or {}
    sends_n, first_ns, last_ns = footer
    sends_n = (v.get("counts") or {}).get("sends", sends_n)
    start_ns, end_ns = meta.get("start_ns", first_ns), meta.get("end_ns", last_ns)
    state, verdict_text = verdict_state(verdict, has_history)
    if verdict_unreadable:
        state, verdict_text = "broken", "verdict.json is unreadable"
    observed, predicted = v.get("observed") or {}, v.get("predicted") or {}
    availability = v.get("availability") or {}
    stall_n = (v.get("anomalies") or {}).get("stall")
    longest = availability.get("longest_s")
    producers = [p for p in meta.get("producers") or [] if isinstance(p, dict)]
    return IndexRow(
        run_id=str(meta.get("run_id") or name), suite=suite,
        scenario=str(meta.get("scenario") or (v.get("meta") or {}).get("scenario") or "?"),
        kafka_version=str(meta.get("kafka_version") or (v.get("model") or {}).get("kafka_version") or "?"),
        metadata_mode=str(meta.get("metadata_mode") or "kraft"),
        client=_clients(meta, producers),
        acks="+".join(sorted({str(p.get("acks", "?")) for p in producers})) or "?",
        min_isr=str(meta.get("min_insync_replicas", "?")),
        settings=settings_summary(meta), state=state, verdict=verdict_text,
        lost=f"{int(observed.get('lost', 0)):,} / {predicted.get('lost', '?')}" if verdict else "",
        duplicates=f"{int(observed.get('duplicate', 0)):,} / {predicted.get('duplicates', '?')}" if verdict else "",
        stalls=(f"{int(stall_n):,}" + (f" · longest {float(longest):.1f} s" if longest is not None else ""))
        if stall_n is not None else "",
        duration=f"{(end_ns - start_ns) / 1e9:.0f} s" if start_ns is not None and end_ns is not None else "?",
        sends=f"{int(sends_n):,}" if sends_n is not None else "",
        started=_utc(start_ns) if start_ns is not None else "",
        start_ns=int(start_ns or 0), report_href=report_href,
        lost_n=int(observed["lost"]) if verdict and "lost" in observed else None,
        seed=meta.get("seed") if isinstance(meta.get("seed"), int) else None,
    )


def _clients(meta: dict, producers: list[dict]) -> str:
    clients = meta.get("clients")
    names = sorted(clients) if isinstance(clients, dict) and clients else \
        sorted({str(p.get("client") or "librdkafka") for p in producers})
    return "+".join(names) or "librdkafka"


def settings_summary(meta: dict) -> str:
    """Producers and topic settings in one line, e.g. "p0 acks=all idem · RF 3 · min ISR 2"."""
    parts = []
    for p in meta.get("producers") or []:
        parts.append(f"{p.get('name', '?')} acks={p.get('acks', '?')}" + (" idem" if p.get("idempotent") else ""))
    if "replication_factor" in meta:
        parts.append(f"RF {meta['replication_factor']}")
    if "min_insync_replicas" in meta:
        parts.append(f"min ISR {meta['min_insync_replicas']}")
    if meta.get("unclean_leader_election"):
        parts.append("unclean election")
    if meta.get("elr_enabled") is False:
        parts.append("no ELR")
    return " · ".join(parts)


def verdict_state(verdict: dict | None, has_history: bool) -> tuple[str, str]:
    if not has_history:
        return "broken", "no history (history/sends.parquet missing)"
    if verdict is None:
        return "unchecked", "not checked"
    violations = verdict.get("violations") or {}
    if verdict.get("valid") is None and verdict.get("status") == "incomplete":
        incomplete = verdict.get("incomplete") or {}
        return "incomplete", "no verdict: " + "; ".join(
            list(incomplete.get("run") or []) +
            [f"partition {p}: {why}" for p, why in (incomplete.get("partitions") or {}).items()])
    if verdict.get("valid") and not violations:
        return "valid", "valid"
    return "invalid", "violated: " + (", ".join(f"{v} {k}" for k, v in violations.items()) or "see report")


def _sends_footer(run_dir: Path) -> tuple[int | None, int | None, int | None]:
    """Row count and t_invoke_ns range from the Parquet footer, without reading the rows."""
    try:
        metadata = pq.ParquetFile(sends_path(run_dir)).metadata
    except (OSError, ValueError):     # a damaged file (ArrowInvalid is a ValueError): no footer to read
        return None, None, None
    names = [metadata.schema.column(i).name for i in range(metadata.num_columns)]
    if "t_invoke_ns" not in names:
        return metadata.num_rows, None, None
    column = names.index("t_invoke_ns")
    stats = [metadata.row_group(g).column(column).statistics for g in range(metadata.num_row_groups)]
    stats = [s for s in stats if s is not None and s.has_min_max]
    if not stats:
        return metadata.num_rows, None, None
    return metadata.num_rows, min(s.min for s in stats), max(s.max for s in stats)


def json_object(text: str | bytes | None) -> dict | None:
    """A JSON object, or None for nothing, bad JSON or another JSON value."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _json_or_none(file: Path) -> dict | None:
    try:
        return json_object(file.read_bytes()) if file.is_file() else None
    except OSError:
        return None


def _utc(t_ns: int) -> str:
    return dt.datetime.fromtimestamp(t_ns / 1e9, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
