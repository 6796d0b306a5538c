"""Does a DuckDB result (bench/duckdb_reference.py) say what `kafka-chaos check` wrote for the same run?

Why: the benchmark times both engines on one file; comparing the counts, anomaly counts, stalls and instance rows
with the verdict.json and anomalies.parquet the timed check just wrote shows, in the same run, that both answered
the same question. Reads those files only.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

ROW_COLUMNS = ["kind", "partition", "offset", "value", "producer", "op_id", "t_invoke_ns", "t_complete_ns",
               "t_read_ns"]


def _keys(frame: pd.DataFrame) -> list[str]:
    cells = frame[ROW_COLUMNS].astype(object).where(frame[ROW_COLUMNS].notna(), None)
    return [repr(tuple(r)) for r in cells.itertuples(index=False)]


def compare_rows(run_dir: Path, found: pd.DataFrame) -> list[str]:
    """The instance rows against anomalies.parquet's (the check's judged rows, stalls aside), on their columns."""
    path = Path(run_dir) / "anomalies.parquet"
    if not path.exists():
        return ["anomalies.parquet: missing"]
    theirs = pq.read_table(path).to_pandas()
    theirs, mine = _keys(theirs[theirs["kind"] != "stall"]), _keys(found)
    extra, missing = sorted(set(mine) - set(theirs)), sorted(set(theirs) - set(mine))
    return ([f"anomalies.parquet lacks {len(extra)} rows, e.g. {extra[:3]}"] if extra else []) + \
        ([f"duckdb lacks {len(missing)} rows of anomalies.parquet, e.g. {missing[:3]}"] if missing else []) + \
        ([f"rows: anomalies.parquet {len(theirs)}, duckdb {len(mine)}"] if len(theirs) != len(mine) else [])


def compare_verdict(run_dir: Path, findings) -> list[str]:
    """Differences between DuckDB's Findings and the run's verdict.json (counts, anomaly counts, stalls) and
    anomalies.parquet (the rows)."""
    from kafka_chaos.checkers.availability import stalls
    run_dir = Path(run_dir)
    verdict = json.loads((run_dir / "verdict.json").read_text())
    meta = json.loads((run_dir / "meta.json").read_text())
    run = findings.for_run(meta["run_id"])
    found = stalls(run.ack_buckets, run.pending_buckets, [], verdict["availability"]["threshold_s"],
                   meta.get("end_ns"))
    mine = {k: int((run.instances["kind"] == k).sum()) for k in verdict["anomalies"]} | {"stall": len(found)}
    counts = run.counts.as_dict()
    diffs = [f"counts.{k}: verdict {v}, duckdb {counts[k]}" for k, v in verdict["counts"].items() if counts[k] != v]
    diffs += [f"anomalies.{k}: verdict {v}, duckdb {mine[k]}" for k, v in verdict["anomalies"].items() if mine[k] != v]
    theirs = [s[:3] for s in verdict["availability"]["stalls"]]
    ours = [[s.start_ns, s.end_ns, s.partition] for s in found]
    if theirs != ours:
        diffs.append(f"stalls: verdict {theirs}, duckdb {ours}")
    diffs += compare_rows(run_dir, run.instances)
    if verdict["incomplete"]["status"] != "complete":
        diffs.append("the verdict's run is incomplete: its lost counts leave out incomplete partitions")
    return diffs
