"""A checked run's two outputs, anomalies.parquet and verdict.json, written so that a crash never leaves half of one."""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from kafka_chaos.checkers.judge.verdict_file import anomalies_table
from kafka_chaos.checkers.timings import Timings, timed

log = logging.getLogger(__name__)


def write_outputs(run_dir: Path, verdict: dict, judged: pd.DataFrame, spent: dict | None = None,
                  started: float | None = None) -> None:
    """Both outputs through temporary names. With `spent` (phase -> seconds, checkers.timings) and `started` (the
    check's start), writing anomalies.parquet is the `report` phase, verdict.json gets the timings and `-v` logs
    them."""
    with timed(spent if spent is not None else {}, "report"):
        tmp = run_dir / ".anomalies.parquet.tmp"
        pq.write_table(anomalies_table(judged), tmp)
        os.replace(tmp, run_dir / "anomalies.parquet")
    if spent is not None:
        timings = Timings.of(spent, started)
        verdict["timings"] = timings.as_dict()
        log.debug("%s", timings.line(run_dir.name))
    tmp = run_dir / ".verdict.json.tmp"
    tmp.write_text(json.dumps(verdict, indent=2, default=_json_default) + "\n")
    os.replace(tmp, run_dir / "verdict.json")


def _json_default(x):
    if hasattr(x, "item"):
        return x.item()
    if isinstance(x, (set, tuple)):
        return list(x)
    raise TypeError(f"not JSON serialisable: {type(x)}")
