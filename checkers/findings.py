"""What an anomaly pass (Spark or the pandas reference) hands to the judge: instances, counts, unsettled sends.

Kept free of Spark imports, so the pandas engine never loads PySpark.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from checkers import instances
from checkers.reference import Counts


@dataclass
class Findings:
    """What the anomaly pass returns for a set of runs, keyed by run_id."""

    instances: pd.DataFrame        # instance columns + run_id
    counts: dict[str, Counts]
    unsettled: pd.DataFrame        # sends that failed or timed out: run_id, partition, acks, t_invoke_ns, t_complete_ns
    acks: dict[str, tuple] = field(default_factory=dict)          # acks values in use per run
    idempotent: dict[str, tuple] = field(default_factory=dict)    # idempotence flags in use per run

    def for_run(self, run_id: str) -> tuple[pd.DataFrame, Counts, pd.DataFrame]:
        inst = self.instances[self.instances["run_id"] == run_id].drop(columns="run_id")
        uns = self.unsettled[self.unsettled["run_id"] == run_id].drop(columns="run_id")
        zero = Counts(0, 0, 0, 0, 0, 0)
        return instances.normalise(inst), self.counts.get(run_id, zero), uns.reset_index(drop=True)
