"""Where a check's time went: verdict.json's `timings` and the line `check -v` logs for each run.

The model replays in the check's main thread while Spark starts and scans in another (checkers.check), so `model`
overlaps `spark_start` and `scans` and is listed under `overlapping`; the other phases follow one another, so their
sum is at most `wall_s`. Spark start, scans and model are the whole check's (runs checked together share them);
judge and report are the run's own.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass

PHASES = ("spark_start", "scans", "model", "judge", "report")
OVERLAPPING = ("model",)        # beside spark_start and scans, in another thread
LABELS = {"spark_start": "Spark start", "scans": "scans", "model": "model", "judge": "judge", "report": "report"}


@contextmanager
def timed(spent: dict, phase: str):
    """Add the block's wall time to spent[phase] (a phase may be timed in pieces)."""
    t0 = time.monotonic()
    try:
        yield
    finally:
        spent[phase] = spent.get(phase, 0.0) + time.monotonic() - t0


@dataclass(frozen=True)
class Timings:
    """Seconds per phase of one run's check, and from the check's start to this run's verdict (wall_s)."""

    phases: dict
    wall_s: float

    @classmethod
    def of(cls, spent: dict, started: float) -> "Timings":
        return cls({p: round(max(0.0, spent.get(p, 0.0)), 3) for p in PHASES},
                   round(time.monotonic() - started, 3))

    def as_dict(self) -> dict:
        return {"wall_s": self.wall_s, "phases": dict(self.phases), "overlapping": list(OVERLAPPING)}

    def line(self, run_id: str) -> str:
        parts = [f"{LABELS[p]} {s:.2f} s" + (" (beside Spark start and scans)" if p in OVERLAPPING else "")
                 for p, s in self.phases.items()]
        return f"{run_id}: phases: {', '.join(parts)}; wall {self.wall_s:.2f} s"
