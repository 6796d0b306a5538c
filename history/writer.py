"""The results directory of one run: meta.json, the journals while it runs, the Parquet history at the end.

HistoryWriter owns results/<run_id>/: it refuses a directory that already holds a run (unless told to overwrite),
writes meta.json as soon as the run starts (so a crashed run still says what it was), takes the nemesis' fault
events through `record_fault`, and turns the journals into Parquet at the end. `repair(dir)` does the last step
for a run that crashed.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from kafka_chaos.base.errors import UsageError
from kafka_chaos.base.names import child
from kafka_chaos.history.build import HistorySummary, build_history
from kafka_chaos.history.journal import CLUSTER_FILE, FAULTS_FILE, EventJournal, write_atomic
from kafka_chaos.history.layout import META_FILE, RUN_MARKERS
from kafka_chaos.history.meta import RunMeta
from kafka_chaos.history.schema import META_REQUIRED


class HistoryWriter:
    """results/<run_id>/ for one run. `meta` (a RunMeta, or its dict) needs partitions, replication_factor and
    min_insync_replicas; its run_id is the directory's name."""

    def __init__(self, run_dir: str | Path, meta: RunMeta | dict, *, overwrite: bool = False):
        self.dir = Path(run_dir)
        meta = meta.to_dict() if isinstance(meta, RunMeta) else dict(meta)
        self._check_meta(meta)
        if any((self.dir / m).exists() for m in RUN_MARKERS):
            if not overwrite:
                raise UsageError(f"{self.dir} already holds a run",
                                 "pick another run id, or pass --overwrite to replace it")
            shutil.rmtree(self.dir)
        self.journal_dir.mkdir(parents=True, exist_ok=True)
        self.meta = dict(meta) | {"run_id": self.dir.name}
        self.write_meta()
        self._faults = EventJournal(self.journal_dir / FAULTS_FILE)
        self._cluster = EventJournal(self.journal_dir / CLUSTER_FILE)

    @classmethod
    def create(cls, results_root: str | Path, run_id: str, meta: RunMeta | dict, *, overwrite: bool = False):
        """results_root/run_id: the run id one safe segment (base/names.py), the directory inside the root."""
        return cls(child(results_root, run_id), meta, overwrite=overwrite)

    @staticmethod
    def _check_meta(meta: dict) -> None:
        for key, typ in META_REQUIRED.items():
            if key == "run_id":
                continue
            if not isinstance(meta.get(key), typ):
                raise UsageError(f"meta.json needs {key} ({typ.__name__}); got {meta.get(key)!r}",
                                 "pass it to HistoryWriter(meta=...)")

    @property
    def run_id(self) -> str:
        return self.dir.name

    @property
    def history_dir(self) -> Path:
        return self.dir / "history"

    @property
    def journal_dir(self) -> Path:
        return self.history_dir / "journal"

    # ---- meta.json -------------------------------------------------------------------------------------------
    def update_meta(self, **fields) -> None:
        self.meta.update({k: v for k, v in fields.items() if v is not None})
        self.write_meta()

    def write_meta(self) -> None:
        write_atomic(self.dir / META_FILE, json.dumps(self.meta, indent=2, sort_keys=True) + "\n")

    # ---- events from the nemesis and the sampler ---------------------------------------------------------------
    def record_fault(self, event) -> None:
        """Journal a fault start or heal: any object with t_ns, action, fault, nodes, details (dict or JSON)."""
        details = event.details
        if not isinstance(details, str):
            details = json.dumps(details, sort_keys=True)
        t_ns = event.t_ns if event.t_ns is not None else time.time_ns()
        self._faults.append({"t_ns": int(t_ns), "action": str(event.action), "fault": str(event.fault),
                             "nodes": [int(n) for n in event.nodes], "details": details})

    def record_cluster_sample(self, rows: list[dict]) -> None:
        """Journal one state sample: one row per partition, cluster.parquet's columns."""
        self._cluster.append(*rows)

    # ---- the end ---------------------------------------------------------------------------------------------
    def finalize(self) -> HistorySummary:
        """Build the Parquet files from the journals (the journals stay, for a later repair)."""
        self._faults.close()
        self._cluster.close()
        self.write_meta()
        return build_history(self.dir)


def repair(run_dir: str | Path) -> HistorySummary:
    """Rebuild the Parquet history of a run that crashed, from whatever its journals hold."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: no such results directory", "give the path of results/<run_id>")
    if not (run_dir / "history" / "journal").is_dir():
        raise UsageError(f"{run_dir}: has no history/journal/, so it is not a kafka-chaos run",
                         "give the path of results/<run_id>")
    return build_history(run_dir)
