"""The suite: RESULTS_ROOT/index.html after every run's report.html is written. The nightly job publishes it.

A run is any directory directly under the root with a history or a meta.json. Each run's report.html is written
when it is missing or older than the run's verdict, so every link works; the page itself is the results index
(report/index.py: every run with filters, sorting, trends), which reads only meta.json and verdict.json.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from kafka_chaos.base.errors import HarnessError
from kafka_chaos.history.layout import run_dirs, sends_path
from kafka_chaos.report.data import ReportOptions
from kafka_chaos.report.index import INDEX_NAME, write_index
from kafka_chaos.report.page import REPORT_NAME, write_report

log = logging.getLogger(__name__)
__all__ = ["INDEX_NAME", "SuiteOptions", "find_runs", "report_is_stale", "write_suite"]


@dataclass(frozen=True)
class SuiteOptions:
    build_reports: bool = True   # write missing or stale report.html files before listing the runs
    report: ReportOptions = ReportOptions()


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


def write_suite(root: Path | str, options: SuiteOptions = SuiteOptions()) -> Path:
    """Writes ROOT/index.html, the results index (report/index.py), building missing reports first; returns its path."""
    root = Path(root)
    if not root.is_dir():
        raise HarnessError(f"{root} is not a directory", "pass the directory holding the results directories")
    failures: dict[str, tuple[str, str]] = {}
    if options.build_reports:
        for run_dir in find_runs(root):
            if sends_path(run_dir).is_file() and report_is_stale(run_dir):
                try:
                    write_report(run_dir, options.report)
                except HarnessError as e:
                    failures[run_dir.name] = ("broken", f"report failed: {e.cause}")
                    log.warning("no report for %s: %s", run_dir, e.cause)
    return write_index(root, failures, generator="kafka-chaos report --suite")
