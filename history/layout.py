"""What a results directory holds, and which directories are results directories: one rule for the whole house.

results/<run_id>/ is a run when it has a meta.json (written as the run starts) or a history/ (its journals, then
its Parquet files); a results root is a directory of runs. docs/history.md describes each file.
"""
from __future__ import annotations

from pathlib import Path

META_FILE = "meta.json"
HISTORY_DIR = "history"
JOURNAL_DIR = "history/journal"
SENDS_FILE = "history/sends.parquet"
VERDICT_FILE = "verdict.json"
ANOMALIES_FILE = "anomalies.parquet"
REPORT_FILE = "report.html"
RUN_MARKERS = (META_FILE, HISTORY_DIR)


def is_run_dir(path: Path | str) -> bool:
    """A results directory of one run (a crashed one too: it has at least its meta.json or history/)."""
    path = Path(path)
    return path.is_dir() and any((path / m).exists() for m in RUN_MARKERS)


def run_dirs(root: Path | str) -> list[Path]:
    """The results directories directly under a results root, by name (run ids start with their time)."""
    root = Path(root)
    return sorted(d for d in root.iterdir() if is_run_dir(d)) if root.is_dir() else []


def sends_path(run_dir: Path | str) -> Path:
    return Path(run_dir) / SENDS_FILE
