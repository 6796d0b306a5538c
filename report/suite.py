"""The suite page: RESULTS_ROOT/index.html, one row per run with a link to its report. The nightly job publishes it.

A run is any directory directly under the root with a history or a meta.json. The page reads only meta.json,
verdict.json and the Parquet footers (row counts, time ranges), so it stays quick for many runs; it also writes
each run's report.html when that is missing or older than the run's verdict, so every link works.
"""
from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from kafka_chaos.base.errors import HarnessError
from kafka_chaos.history.layout import run_dirs, sends_path
from kafka_chaos.history.meta import HistoryError, read_meta_dict
from kafka_chaos.report.data import ReportOptions
from kafka_chaos.report.page import REPORT_NAME, template_environment, write_report

log = logging.getLogger(__name__)
INDEX_NAME = "index.html"


@dataclass(frozen=True)
class SuiteOptions:
    build_reports: bool = True   # write missing or stale report.html files before listing the runs
    report: ReportOptions = ReportOptions()


@dataclass
class SuiteRow:
    """One run as the suite page shows it."""

    run_id: str
    scenario: str
    kafka_version: str
    settings: str
    state: str                 # valid, invalid, unchecked, broken
    verdict: str
    lost: str                  # observed lost against the model's prediction
    duplicates: str
    duration: str
    sends: str
    started: str
    report_href: str | None
    sort_key: tuple


def find_runs(root: Path) -> list[Path]:
    """Directories directly under root that look like results directories."""
    return run_dirs(root)


def report_is_stale(run_dir: Path) -> bool:
    report = run_dir / REPORT_NAME
    if not report.is_file():
        return True
    inputs = [run_dir / "verdict.json", run_dir / "anomalies.parquet", sends_path(run_dir), run_dir / "meta.json"]
    newest = max((f.stat().st_mtime for f in inputs if f.is_file()), default=0)
    return report.stat().st_mtime < newest


def suite_row(run_dir: Path) -> SuiteRow:
    try:
        meta = read_meta_dict(run_dir) or {}
    except HistoryError:
        meta = {}
    verdict = _json_or_none(run_dir / "verdict.json")
    has_history = sends_path(run_dir).is_file()
    sends, first_ns, last_ns = _sends_footer(run_dir) if has_history else (None, None, None)
    start_ns = meta.get("start_ns", first_ns)
    end_ns = meta.get("end_ns", last_ns)
    state, verdict_text = _verdict_state(verdict, has_history)
    if verdict is None and (run_dir / "verdict.json").is_file():
        state, verdict_text = "broken", "verdict.json is unreadable"
    observed = (verdict or {}).get("observed") or {}
    predicted = (verdict or {}).get("predicted") or {}
    return SuiteRow(
        run_id=str(meta.get("run_id") or run_dir.name),
        scenario=str(meta.get("scenario") or ((verdict or {}).get("meta") or {}).get("scenario") or "?"),
        kafka_version=str(meta.get("kafka_version") or ((verdict or {}).get("model") or {}).get("kafka_version")
                          or "?"),
        settings=settings_summary(meta),
        state=state,
        verdict=verdict_text,
        lost=f"{int(observed.get('lost', 0)):,} / {predicted.get('lost', '?')}" if verdict else "",
        duplicates=f"{int(observed.get('duplicate', 0)):,} / {predicted.get('duplicates', '?')}" if verdict else "",
        duration=f"{(end_ns - start_ns) / 1e9:.0f} s" if start_ns is not None and end_ns is not None else "?",
        sends=f"{sends:,}" if sends is not None else "",
        started=_utc(start_ns) if start_ns is not None else "",
        report_href=f"{run_dir.name}/{REPORT_NAME}" if (run_dir / REPORT_NAME).is_file() else None,
        sort_key=(-(start_ns or 0), run_dir.name),
    )


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


def write_suite(root: Path | str, options: SuiteOptions = SuiteOptions()) -> Path:
    """Writes ROOT/index.html (building missing reports first) and returns its path."""
    root = Path(root)
    if not root.is_dir():
        raise HarnessError(f"{root} is not a directory", "pass the directory holding the results directories")
    runs = find_runs(root)
    failures: dict[str, str] = {}
    if options.build_reports:
        for run_dir in runs:
            if sends_path(run_dir).is_file() and report_is_stale(run_dir):
                try:
                    write_report(run_dir, options.report)
                except HarnessError as e:
                    failures[run_dir.name] = e.cause
                    log.warning("no report for %s: %s", run_dir, e.cause)
    rows = sorted((suite_row(d) for d in runs), key=lambda r: r.sort_key)
    for row in rows:
        if row.run_id in failures:
            row.state, row.verdict = "broken", f"report failed: {failures[row.run_id]}"
    summary = {state: sum(r.state == state for r in rows)
               for state in ("valid", "invalid", "incomplete", "unchecked", "broken")}
    html = template_environment().get_template("suite.html.j2").render(
        root=root.name or str(root), rows=rows, summary=summary,
        generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    index = root / INDEX_NAME
    index.write_text(html, encoding="utf-8")
    return index


def _verdict_state(verdict: dict | None, has_history: bool) -> tuple[str, str]:
    if not has_history:
        return "broken", "no history (history/sends.parquet missing)"
    if verdict is None:
        return "unchecked", "not checked"
    violations = verdict.get("violations") or {}
    if verdict.get("valid") is None and verdict.get("status") == "incomplete":
        return "incomplete", "no verdict: " + "; ".join(
            list((verdict.get("incomplete") or {}).get("run") or []) +
            [f"partition {p}: {why}" for p, why in ((verdict.get("incomplete") or {}).get("partitions") or {}).items()])
    if verdict.get("valid") and not violations:
        return "valid", "valid"
    return "invalid", "violated: " + (", ".join(f"{v} {k}" for k, v in violations.items()) or "see report")


def _sends_footer(run_dir: Path) -> tuple[int | None, int | None, int | None]:
    """Row count and t_invoke_ns range from the Parquet footer, without reading the rows."""
    try:
        metadata = pq.ParquetFile(sends_path(run_dir)).metadata
    except OSError:
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


def _json_or_none(file: Path) -> dict | None:
    if not file.is_file():
        return None
    try:
        value = json.loads(file.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _json_or_empty(file: Path) -> dict:
    return _json_or_none(file) or {}


def _utc(t_ns: int) -> str:
    return dt.datetime.fromtimestamp(t_ns / 1e9, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
