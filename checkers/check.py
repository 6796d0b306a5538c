"""`kafka-chaos check`: check one results directory, or many in one Spark job, and write their verdicts.

Exit codes: 0 every checked run is valid, 1 a violation was found, 2 unusable input (a run whose files break
the history format; the message names the file and the column).
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from checkers import reference
from checkers.history_io import HistoryError, RunMeta, load_meta, read_table, validate_run
from checkers.isr_model import ModelConfig, ModelResult, run_model
from checkers.schema import CLUSTER_SCHEMA, FAULTS_SCHEMA, READS_SCHEMA, SENDS_SCHEMA
from checkers.verdict import anomalies_table, build_verdict, judge
from harness.errors import HarnessError, UsageError

log = logging.getLogger(__name__)

EXIT_VALID, EXIT_VIOLATION, EXIT_UNUSABLE = 0, 1, 2
VERDICTS_TABLE = "verdicts.parquet"


@dataclass
class RunOutcome:
    """One run's line in the table of verdicts."""

    run_id: str
    path: Path
    status: str                 # checked | kept (verdict existed, no --force) | unusable
    valid: bool | None = None
    verdict: dict | None = None
    error: str | None = None

    @property
    def exit_code(self) -> int:
        if self.status == "unusable":
            return EXIT_UNUSABLE
        return EXIT_VALID if self.valid else EXIT_VIOLATION


def find_runs(paths: list[Path]) -> list[Path]:
    """Results directories among `paths`: a directory with meta.json or history/ is a run, else a root of runs."""
    runs = []
    for p in map(Path, paths):
        if (p / "meta.json").exists() or (p / "history").is_dir():
            runs.append(p)
        elif p.is_dir():
            children = sorted(c for c in p.iterdir() if c.is_dir() and
                              ((c / "meta.json").exists() or (c / "history").is_dir()))
            if not children:
                raise UsageError(f"{p}: neither a results directory (no meta.json) nor a root of results "
                                 "directories", "pass results/<run_id> or the results root")
            runs.extend(children)
        else:
            raise UsageError(f"{p}: no such directory", "pass results/<run_id> or the results root")
    return runs


def _model_for(run_dir: Path, present: dict, meta: RunMeta, acks=(), idempotent=()) -> ModelResult:
    faults = read_table(present.get("history/faults.parquet"), FAULTS_SCHEMA)
    samples = read_table(present.get("history/cluster.parquet"), CLUSTER_SCHEMA)
    cfg = ModelConfig.from_meta(meta, acks=tuple(acks), idempotent=tuple(idempotent))
    return run_model(cfg, faults, samples, t_begin=meta.start_ns, t_end=meta.end_ns)


def _write(run_dir: Path, verdict: dict, judged: pd.DataFrame) -> None:
    """Write both outputs through temporary names, so a crash never leaves half a verdict behind."""
    tmp = run_dir / ".anomalies.parquet.tmp"
    pq.write_table(anomalies_table(judged), tmp)
    os.replace(tmp, run_dir / "anomalies.parquet")
    tmp = run_dir / ".verdict.json.tmp"
    tmp.write_text(json.dumps(verdict, indent=2, default=_json_default) + "\n")
    os.replace(tmp, run_dir / "verdict.json")


def _json_default(x):
    if hasattr(x, "item"):
        return x.item()
    if isinstance(x, (set, tuple)):
        return list(x)
    raise TypeError(f"not JSON serialisable: {type(x)}")


def check(paths: list, force: bool = False, spark_master: str | None = None, engine: str = "spark",
          table: bool = True) -> list[RunOutcome]:
    """Check every run under `paths` and write verdict.json and anomalies.parquet into each."""
    outcomes: list[RunOutcome] = []
    ready: dict[str, tuple[Path, RunMeta, dict]] = {}
    for run_dir in find_runs(paths):
        try:
            meta = load_meta(run_dir)
            if (run_dir / "verdict.json").exists() and not force:
                kept = json.loads((run_dir / "verdict.json").read_text())
                print(f"{run_dir}: verdict.json exists, kept it (pass --force to check again)")
                outcomes.append(RunOutcome(meta.run_id, run_dir, "kept", bool(kept.get("valid")), kept))
                continue
            present = validate_run(run_dir)
        except HistoryError as e:
            outcomes.append(RunOutcome(run_dir.name, run_dir, "unusable", error=e.cause))
            continue
        if meta.run_id in ready:
            outcomes.append(RunOutcome(meta.run_id, run_dir, "unusable",
                                       error=f"{run_dir}/meta.json: run_id {meta.run_id!r} also used by "
                                             f"{ready[meta.run_id][0]}"))
            continue
        ready[meta.run_id] = (run_dir, meta, present)

    if ready:
        findings = _find(ready, engine, spark_master)
        for run_id, (run_dir, meta, present) in ready.items():
            inst, counts, unsettled = findings.for_run(run_id)
            model = _model_for(run_dir, present, meta, findings.acks.get(run_id, ()),
                               findings.idempotent.get(run_id, ()))
            judged = judge(inst, meta, model)
            verdict = build_verdict(meta, judged, counts, unsettled, model)
            _write(run_dir, verdict, judged)
            outcomes.append(RunOutcome(run_id, run_dir, "checked", verdict["valid"], verdict))
    if table and len(outcomes) > 1:
        _write_table(outcomes, paths)
    return outcomes


def _find(ready: dict, engine: str, spark_master: str | None):
    runs = {run_id: run_dir for run_id, (run_dir, _, _) in ready.items()}
    if engine == "spark":
        from checkers.anomalies import find_anomalies_spark
        from checkers.spark import get_spark
        return find_anomalies_spark(get_spark(spark_master), runs)
    if engine == "pandas":
        return reference_findings(runs, {rid: present for rid, (_, _, present) in ready.items()})
    raise UsageError(f"unknown engine {engine!r}", "use spark or pandas")


def reference_findings(runs: dict[str, Path], present: dict[str, dict]):
    """The same Findings as the Spark pass, computed one run at a time with the pandas reference."""
    from checkers.findings import Findings
    frames, counts, unsettled, acks, idem = [], {}, [], {}, {}
    for run_id in runs:
        sends = read_table(present[run_id]["history/sends.parquet"], SENDS_SCHEMA)
        reads = read_table(present[run_id]["history/reads.parquet"], READS_SCHEMA)
        frames.append(reference.find_anomalies(sends, reads).assign(run_id=run_id))
        counts[run_id] = reference.count(sends, reads)
        bad = sends[sends["outcome"].isin(["fail", "info"])]
        unsettled.append(bad[["partition", "acks", "t_invoke_ns", "t_complete_ns"]].assign(run_id=run_id))
        acks[run_id] = tuple(sorted(sends["acks"].unique()))
        idem[run_id] = tuple(sorted(bool(x) for x in sends["idempotent"].unique()))
    return Findings(instances=pd.concat(frames, ignore_index=True), counts=counts,
                    unsettled=pd.concat(unsettled, ignore_index=True), acks=acks, idempotent=idem)


def _table_dir(paths: list) -> Path:
    paths = [Path(p) for p in paths]
    if len(paths) == 1 and not (paths[0] / "meta.json").exists():
        return paths[0]                                   # a results root
    parents = {p.resolve().parent for p in paths}
    return parents.pop() if len(parents) == 1 else Path.cwd()


def _write_table(outcomes: list[RunOutcome], paths: list) -> Path:
    rows = []
    for o in outcomes:
        v = o.verdict or {}
        rows.append({"run_id": o.run_id, "path": str(o.path), "status": o.status, "valid": o.valid,
                     "violations": json.dumps(v.get("violations", {})),
                     **{f"n_{k}": (v.get("anomalies") or {}).get(k) for k in
                        ("lost", "duplicate", "phantom", "divergent", "failed_read", "offset_mismatch",
                         "nonmonotonic_send", "poll_skip", "recovered")},
                     "sends": (v.get("counts") or {}).get("sends"), "unavailable": v.get("unavailable"),
                     "predicted_lost": (v.get("predicted") or {}).get("lost"), "error": o.error})
    frame = pd.DataFrame(rows)
    out = _table_dir(paths) / VERDICTS_TABLE
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), out)
    print(f"table of verdicts: {out}")
    return out


def print_outcomes(outcomes: list[RunOutcome]) -> None:
    width = max([len(o.run_id) for o in outcomes] + [6])
    for o in outcomes:
        if o.status == "unusable":
            print(f"{o.run_id:<{width}}  UNUSABLE   {o.error}")
            continue
        v = o.verdict or {}
        label = "valid" if o.valid else "INVALID"
        viol = ", ".join(f"{k}={n}" for k, n in (v.get("violations") or {}).items()) or "-"
        note = " (kept)" if o.status == "kept" else ""
        print(f"{o.run_id:<{width}}  {label:<9}  violations: {viol}  sends: "
              f"{(v.get('counts') or {}).get('sends')}  unavailable: {v.get('unavailable', 0):.4f}{note}")


def exit_code(outcomes: list[RunOutcome]) -> int:
    return max((o.exit_code for o in outcomes), default=EXIT_VALID)


def check_run(path, force: bool = False, spark_master: str | None = None, engine: str = "spark") -> int:
    """Check one results directory (as at the end of every run); return the exit code.

    An unusable run raises HistoryError (exit 2, naming the file and column) so the caller sees why.
    """
    outcomes = check([Path(path)], force=force, spark_master=spark_master, engine=engine, table=False)
    for o in outcomes:
        if o.status == "unusable":
            raise HistoryError(o.error)
    print_outcomes(outcomes)
    return exit_code(outcomes)


def check_many(paths: list, force: bool = False, spark_master: str | None = None, engine: str = "spark") -> int:
    outcomes = check(list(paths), force=force, spark_master=spark_master, engine=engine)
    print_outcomes(outcomes)
    if len(outcomes) == 1 and outcomes[0].status == "unusable":
        raise HistoryError(outcomes[0].error)
    return exit_code(outcomes)


__all__ = ["check", "check_run", "check_many", "find_runs", "RunOutcome", "HarnessError"]
