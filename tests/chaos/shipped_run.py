"""The real run shipped in the repository (tests/data/real-runs/): a short leader-kill at acks=1, min ISR 2 (seed
7, 20 s at 300 writes/s, Kafka 4.4.0, 2026-12-07), kept small: meta.json, schedule.json, the history's Parquet
files, the controller's and clients' logs (the checker reads them), verdict.json and anomalies.parquet; no journal,
no broker logs, no report (written on the copy). Tests read copies of it, never the files themselves."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

SHIPPED_ROOT = Path(__file__).resolve().parents[1] / "data" / "real-runs"
SHIPPED_RUN = "20261207T061640-leader-kill-acks1-isr2-s7"
STORED_DEFAULT = Path("/work/realruns/r")


def stored_root() -> Path | None:
    """The machine's stored real runs: KAFKA_CHAOS_REAL_RUNS if set, else the default if it exists, else None."""
    if "KAFKA_CHAOS_REAL_RUNS" in os.environ:
        return Path(os.environ["KAFKA_CHAOS_REAL_RUNS"])
    return STORED_DEFAULT if STORED_DEFAULT.is_dir() else None


def copy_shipped(target: Path, report: bool = True) -> Path:
    """A copy of the shipped runs' root at `target` (each run's report.html written there): the root's path."""
    shutil.copytree(SHIPPED_ROOT, target)
    if report:
        from kafka_chaos.report.page import write_report

        for run in sorted(p for p in target.iterdir() if p.is_dir()):
            write_report(run)
    return target


def real_runs_root(tmp: Path) -> Path:
    """Where the real-run tests read: the stored runs where this machine has them, else a copy of the shipped one."""
    stored = stored_root()
    return stored if stored is not None else copy_shipped(tmp / "real-runs")
