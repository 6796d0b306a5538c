"""What an anomaly pass (Spark or the pandas reference) hands to the judge: instances, counts, the availability
buckets and which partitions the final drain read.

Kept free of Spark imports, so the pandas engine never loads PySpark.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from kafka_chaos.checkers import instances
from kafka_chaos.checkers.reference import Counts


@dataclass
class Findings:
    """What the anomaly pass returns for a set of runs, keyed by run_id."""

    instances: pd.DataFrame        # instance columns + run_id
    counts: dict[str, Counts]
    ack_buckets: pd.DataFrame      # run_id, partition, first, last (checkers.availability)
    pending_buckets: pd.DataFrame  # run_id, partition, first, last
    final_reads: dict[str, dict[int, int]] = field(default_factory=dict)   # run -> partition -> final reads
    acks: dict[str, tuple] = field(default_factory=dict)          # acks values in use per run
    idempotent: dict[str, tuple] = field(default_factory=dict)    # idempotence flags in use per run

    def for_run(self, run_id: str) -> "RunFindings":
        def mine(frame: pd.DataFrame) -> pd.DataFrame:
            return frame[frame["run_id"] == run_id].drop(columns="run_id").reset_index(drop=True)
        mine_only = self.instances["run_id"] == run_id
        inst = self.instances if mine_only.all() else self.instances[mine_only]     # one run: no copy to filter
        inst = inst.drop(columns="run_id")
        return RunFindings(instances.normalise(inst), self.counts.get(run_id, Counts(0, 0, 0, 0, 0, 0)),
                           mine(self.ack_buckets), mine(self.pending_buckets), self.final_reads.get(run_id, {}),
                           self.acks.get(run_id, ()))


@dataclass
class RunFindings:
    """One run's share of Findings."""

    instances: pd.DataFrame
    counts: Counts
    ack_buckets: pd.DataFrame
    pending_buckets: pd.DataFrame
    final_reads: dict[int, int]
    acks: tuple = ()               # acks values in use ((): not known)

    @property
    def acked_partitions(self) -> set[int]:
        return {int(p) for p in self.ack_buckets["partition"].unique()}
