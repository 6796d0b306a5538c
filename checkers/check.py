"""`kafka-chaos check`: check one results directory, or many in one Spark job, and write their verdicts.

Exit codes: 0 every checked run is valid, 1 a violation was found, 2 unusable input (a run whose files break
the history format; the message names the file and the column), 3 a run that cannot be judged (its final drain
did not complete, or it was interrupted): it gets no verdict, never a pass.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kafka_chaos.base import exits
from kafka_chaos.base.errors import HarnessError, UsageError
from kafka_chaos.checkers import availability, clients, reference, replica_audit, stall_cause
from kafka_chaos.checkers.client import ClientVoids, client_voids, may_void, out_of_order
from kafka_chaos.checkers.completeness import completeness
from kafka_chaos.checkers.findings import Findings
from kafka_chaos.checkers.judge.rules import judge
from kafka_chaos.checkers.judge.verdict_file import build_verdict
from kafka_chaos.checkers.model import ModelConfig, ModelResult, observed, run_model
from kafka_chaos.checkers.model.windows import intersect_windows
from kafka_chaos.checkers.outputs import write_outputs
from kafka_chaos.checkers.timings import timed
from kafka_chaos.checkers.workload_kinds import with_workload_kinds
from kafka_chaos.history.controller_log import fatal_faults, fenced_times, fencing_events, unfence_times
from kafka_chaos.history.layout import is_run_dir, run_dirs, sends_path
from kafka_chaos.history.meta import HistoryError, RunMeta, load_meta
from kafka_chaos.history.reader import read_table, sent_with, validate_run
from kafka_chaos.history.schema import ANOMALY_KINDS, CLUSTER_SCHEMA, FAULTS_SCHEMA, READS_SCHEMA, SENDS_SCHEMA

log = logging.getLogger(__name__)

EXIT_VALID, EXIT_VIOLATION, EXIT_UNUSABLE, EXIT_INCOMPLETE = (exits.VALID, exits.VIOLATION, exits.UNUSABLE,
                                                              exits.NO_VERDICT)
VERDICTS_TABLE = "verdicts.parquet"
# While the model replays in Python beside the Spark pass, a thread back from a Py4J call waits for the GIL up to
# the switch interval (5 ms by default) before it can submit the next job or read a result (_quick_switches).
SWITCH_INTERVAL_S = 0.0005


@dataclass(frozen=True)
class CheckSettings:
    """How strict the judgement is where Kafka itself promises nothing."""

    stall_threshold_s: float = availability.DEFAULT_THRESHOLD_S   # shorter gaps between acks are no stall
    max_stall_s: float | None = None                             # a longer stall is a violation (default: none is)

    def __post_init__(self):
        if self.stall_threshold_s < 2 * availability.BUCKET_NS / 1e9:
            raise UsageError(f"--stall-threshold {self.stall_threshold_s:g} s is below the 0.2 s the availability "
                             "measure resolves", "give 0.2 s or more (default 2)")
        if self.max_stall_s is not None and self.max_stall_s < self.stall_threshold_s:
            raise UsageError(f"--max-stall {self.max_stall_s:g} s is below the stall threshold "
                             f"{self.stall_threshold_s:g} s", "give a --max-stall at least the threshold")


@dataclass
class RunOutcome:
    """One run's line in the table of verdicts."""

    run_id: str
    path: Path
    status: str                 # checked | kept (verdict existed, no --force) | unusable
    valid: bool | None = None   # None: no verdict (the run could not be judged)
    verdict: dict | None = None
    error: str | None = None

    @property
    def exit_code(self) -> int:
        if self.status == "unusable":
            return EXIT_UNUSABLE
        if self.valid is None:
            return EXIT_INCOMPLETE
        return EXIT_VALID if self.valid else EXIT_VIOLATION


def find_runs(paths: list[Path]) -> list[Path]:
    """Results directories among `paths`: a directory with meta.json or history/ is a run, else a root of runs."""
    runs = []
    for p in map(Path, paths):
        if is_run_dir(p):
            runs.append(p)
        elif p.is_dir():
            children = run_dirs(p)
            if not children:
                raise UsageError(f"{p}: neither a results directory (no meta.json) nor a root of results "
                                 "directories", "pass results/<run_id> or the results root")
            runs.extend(children)
        else:
            raise UsageError(f"{p}: no such directory", "pass results/<run_id> or the results root")
    return runs


def model_for(present: dict, meta: RunMeta, run_dir: Path | None = None) -> tuple[ModelResult, "pd.DataFrame"]:
    """The model replayed on a run's faults (run_dir: its logged unfence times), and the run's cluster samples."""
    faults = read_table(present.get("history/faults.parquet"), FAULTS_SCHEMA)
    samples = read_table(present.get("history/cluster.parquet"), CLUSTER_SCHEMA)
    cfg = ModelConfig.from_meta(meta, *sent_with(present.get("history/sends.parquet")))   # as sent
    logged = fencing_events(run_dir) if run_dir is not None else []      # the node logs, read once
    unfences = unfence_times(run_dir, logged)                             # the controller's logged grants
    fences = _within(fenced_times(run_dir, logged), meta)                 # ... and this run's fencings
    model = run_model(cfg, faults, samples, t_begin=meta.start_ns, t_end=meta.end_ns, unfences=unfences,
                      fences=fences)
    if run_dir is not None:         # what the self-check holds the model's fencings against (checkers.model.fencings)
        model.logged_fencings, model.halts = fences, fatal_faults(run_dir)
    return model, samples


def _within(times: dict[int, list[int]], meta: RunMeta) -> dict[int, list[int]]:
    """Only the run's own: a cluster kept up across runs (the pytest plugin's, --reuse-cluster) logged earlier ones."""
    lo, hi = meta.start_ns or 0, meta.end_ns or 2 ** 62
    return {b: [t for t in ts if lo <= t <= hi] for b, ts in times.items()}


def _breach_windows(model: ModelResult, samples: pd.DataFrame) -> list[tuple[int, int, int]]:
    """(partition, start, end) in which the ISR was certainly below min.insync.replicas: the model says so (the
    controller's view) and the cluster samples show it (the brokers' view, which is what a leader checks before
    appending: a leader cut off from the controller keeps its old ISR). Either alone could invent a breach."""

    model_side = [(int(p), int(a), int(b)) for p, a, b in model.min_isr_windows()]
    return intersect_windows(model_side, observed.isr_below(samples, model.config.effective_min_isr))


def check(paths: list, force: bool = False, spark_master: str | None = None, engine: str = "spark",
          table: bool = True, settings: CheckSettings = CheckSettings(),
          sources: dict[str, str] | None = None, release_spark: bool = False) -> list[RunOutcome]:
    """Check every run under `paths` and write verdict.json and anomalies.parquet into each.

    release_spark: end the Spark session this call starts once its scans are back (spark.session.ender).
    sources: {local run directory: s3:// URL of the same run} for runs staged from a bucket, whose history Spark's
    jobs then read from the bucket (checkers.s3a)."""
    started, spent = time.monotonic(), {}     # checkers.timings: where the time went
    outcomes: list[RunOutcome] = []
    ready: dict[str, tuple[Path, RunMeta, dict]] = {}
    for run_dir in find_runs(paths):
        try:
            meta = load_meta(run_dir)
            if (run_dir / "verdict.json").exists() and not force:
                kept = json.loads((run_dir / "verdict.json").read_text())
                print(f"{run_dir}: verdict.json exists, kept it (pass --force to check again)")
                outcomes.append(RunOutcome(meta.run_id, run_dir, "kept", kept.get("valid"), kept))
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
        # Three things at once: Spark's JVM starts and runs the anomaly pass, while this thread replays the model
        # (meta, faults and cluster samples only) and compares it with what the cluster showed. The pass needs the
        # model's certain under-min-ISR windows only for its min_isr_breach job, which waits for them.
        checker, windows = {"engine": engine}, Future()
        with _quick_switches(), ThreadPoolExecutor(max_workers=1) as side:
            finding = side.submit(_find, ready, engine, spark_master, windows, checker, spent, sources or {},
                                  release_spark)
            try:
                with timed(spent, "model"):
                    models = {run_id: model_for(present, meta, run_dir) for run_id, (run_dir, meta, present)
                              in ready.items()}
                    windows.set_result({run_id: _breach_windows(m, samples)
                                        for run_id, (m, samples) in models.items()})
                    seen = {run_id: observed.model_disagreements(m, samples)
                            for run_id, (m, samples) in models.items()}
            except BaseException as e:
                windows.set_exception(e)
                raise
            voids = {run_id: client_voids(run_dir, sends_path(run_dir))     # while the pass runs (may_void)
                     for run_id, (run_dir, meta, _) in ready.items() if may_void(meta.producers, sends_path(run_dir))}
            findings = finding.result()
        for run_id, (run_dir, meta, present) in ready.items():
            model, samples = models[run_id]
            own = dict(spent, judge=0.0, report=0.0)
            with timed(own, "judge"):
                found = findings.for_run(run_id)
                timeouts = (voids.get(run_id) or client_voids(run_dir, sends_path(run_dir))) \
                    if out_of_order(found.instances) else ClientVoids()
                verdict, judged = judge_run(meta, model, samples, found, settings, timeouts, run_dir, seen[run_id])
            verdict["checker"] = checker
            write_outputs(run_dir, verdict, judged, own, started)
            outcomes.append(RunOutcome(run_id, run_dir, "checked", verdict["valid"], verdict))
    if table and len(outcomes) > 1:
        write_table(outcomes, paths)
    return outcomes


@contextlib.contextmanager
def _quick_switches(interval_s: float = SWITCH_INTERVAL_S):
    """The interpreter's thread switch interval at `interval_s` for the block, then back to what it was. The pass's
    threads mostly wait on the JVM, and each return from it needs the GIL, which the model's replay holds. A small
    gain on the 10M file (2026-11-26, alternating): Spark's session up in 2.55-2.82 s instead of 2.87-3.48 s (4
    rounds each), `kafka-chaos check` 24.1-25.3 s (median 24.7) instead of 23.9-26.6 s (median 24.9) over 7 pairs."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, interval_s))
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def judge_run(meta: RunMeta, model: ModelResult, samples: pd.DataFrame, found, settings: CheckSettings,
              client_voids: ClientVoids | None = None, run_dir: Path | None = None,
              disagreements: list[dict] | None = None):
    """verdict.json and the judged anomaly rows of one run from its findings (checkers.findings.RunFindings).
    disagreements: observed.model_disagreements(model, samples), if already computed."""
    complete = completeness(meta, found.final_reads, found.acked_partitions, found.counts.sends)
    acks = set(model.config.acks)
    predicted = [(w.start_ns, w.end_ns, w.partition) for w in model.unavailable if acks & set(w.acks)]
    stalls = availability.stalls(found.ack_buckets, found.pending_buckets, predicted, settings.stall_threshold_s,
                                 meta.end_ns)
    span = meta.end_ns - meta.start_ns if meta.start_ns and meta.end_ns else None
    available = availability.summary(stalls, meta.partitions, span, settings.stall_threshold_s,
                                     settings.max_stall_s)
    why = stall_cause.explainer(run_dir, meta.producers, model.unavailable, acks, samples, stalls)
    available |= stall_cause.explained(why, stalls)          # whose time each stall was

    if disagreements is None:
        disagreements = observed.model_disagreements(model, samples)
    losses = observed.unpredicted_losses(disagreements)
    judged = judge(found.instances, meta, model, complete, losses, stalls, settings.max_stall_s, client_voids)
    if run_dir is not None:
        judged = with_workload_kinds(Path(run_dir), judged, meta, model, complete)
    verdict = build_verdict(meta, judged, found.counts, model, complete, available, disagreements)
    if run_dir is not None:
        verdict["replica_audit"] = replica_audit.status(run_dir, meta.extra.get("replica_audit"), judged)
    whole = clients.WholeRun(found.counts, found.acks, stalls) if found.acks else None
    if run_dir is not None and (per_client := clients.compare_run(sends_path(run_dir), judged, meta, predicted,
                                                                  settings.stall_threshold_s, why, whole)):
        verdict["clients"] = per_client
    return verdict, judged


def _find(ready: dict, engine: str, spark_master: str | None, windows: Future, checker: dict, spent: dict,
          sources: dict[str, str], release_spark: bool = False):
    runs = {run_id: run_dir for run_id, (run_dir, _, _) in ready.items()}
    if engine == "spark":
        from kafka_chaos.checkers import s3a
        from kafka_chaos.checkers.spark.anomalies import find_anomalies_spark
        from kafka_chaos.checkers.spark.session import ender
        remote = {run_id: sources[str(Path(d).resolve())] for run_id, d in runs.items()
                  if str(Path(d).resolve()) in sources}
        end = ender(release_spark)          # asked before the session starts: is one running already?
        with timed(spent, "spark_start"):
            spark, read_from = s3a.session(spark_master, remote)
        checker |= spark_identity(spark) | ({"history_read": "s3a"} if read_from else {})
        with timed(spent, "scans"):
            return find_anomalies_spark(spark, runs, windows, read_from, when_done=lambda: end(spark))
    if engine == "pandas":
        with timed(spent, "scans"):
            return reference_findings(runs, {rid: present for rid, (_, _, present) in ready.items()},
                                      windows.result())
    raise UsageError(f"unknown engine {engine!r}", "use spark or pandas")


def spark_identity(spark) -> dict:
    """Which Spark application judged the run: runs checked by one warm session share its id and start time."""
    sc = spark.sparkContext
    return {"spark_master": sc.master, "spark_application_id": sc.applicationId, "spark_started_ms": sc.startTime}


def reference_findings(runs: dict[str, Path], present: dict[str, dict], windows: dict | None = None):
    """The same Findings as the Spark pass, computed one run at a time with the pandas reference."""
    frames, counts, acks_b, pending_b, finals, acks, idem = [], {}, [], [], {}, {}, {}
    for run_id in runs:
        sends = read_table(present[run_id]["history/sends.parquet"], SENDS_SCHEMA)
        reads = read_table(present[run_id]["history/reads.parquet"], READS_SCHEMA)
        frames.append(reference.find_anomalies(sends, reads, (windows or {}).get(run_id, ())).assign(run_id=run_id))
        counts[run_id] = reference.count(sends, reads)
        a, p = availability.reference_buckets(sends)
        acks_b.append(a.assign(run_id=run_id))
        pending_b.append(p.assign(run_id=run_id))
        fin = reads[reads["phase"] == "final"]["partition"].value_counts()
        finals[run_id] = {int(k): int(v) for k, v in fin.items()}
        acks[run_id] = tuple(sorted(sends["acks"].unique()))
        idem[run_id] = tuple(sorted(bool(x) for x in sends["idempotent"].unique()))
    return Findings(instances=pd.concat(frames, ignore_index=True), counts=counts,
                    ack_buckets=pd.concat(acks_b, ignore_index=True),
                    pending_buckets=pd.concat(pending_b, ignore_index=True), final_reads=finals, acks=acks,
                    idempotent=idem)


def _table_dir(paths: list) -> Path | None:
    """Where the table of verdicts goes: the results root given, else the deepest folder holding every run; None
    when that is the file system's root (runs picked from all over: no natural home, so no table)."""
    paths = [Path(p).resolve() for p in paths]
    if len(paths) == 1 and not is_run_dir(paths[0]):
        return paths[0]                                   # a results root
    common = Path(os.path.commonpath([p if not is_run_dir(p) else p.parent for p in paths]))
    return None if common == Path(common.anchor) else common


def write_table(outcomes: list[RunOutcome], paths: list) -> Path | None:
    """verdicts.parquet: one row per run (`check` over many runs, `run --repeat`)."""
    rows = []
    for o in outcomes:
        v = o.verdict or {}
        rows.append({"run_id": o.run_id, "path": str(o.path), "status": o.status, "valid": o.valid,
                     "verdict": v.get("status"), "violations": json.dumps(v.get("violations", {})),
                     **{f"n_{k}": (v.get("anomalies") or {}).get(k) for k in ANOMALY_KINDS},
                     "disagreements": len(v.get("model_disagreements") or []),
                     "sends": (v.get("counts") or {}).get("sends"), "unavailable": v.get("unavailable"),
                     "predicted_lost": (v.get("predicted") or {}).get("lost"), "error": o.error})
    frame = pd.DataFrame(rows)
    folder = _table_dir(paths)
    if folder is None:
        return None
    out = folder / VERDICTS_TABLE
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
        label = "NO VERDICT" if o.valid is None else "valid" if o.valid else "INVALID"
        viol = ", ".join(f"{k}={n}" for k, n in (v.get("violations") or {}).items()) or "-"
        note = " (kept)" if o.status == "kept" else ""
        a = v.get("anomalies") or {}
        avail = v.get("availability") or {}
        print(f"{o.run_id:<{width}}  {label:<10}  violations: {viol}  lost: {a.get('lost', 0)}  "
              f"lost_after_read: {a.get('lost_after_read', 0)}  sends: {(v.get('counts') or {}).get('sends')}  "
              f"longest stall: {avail.get('longest_s', 0):.1f} s  "
              f"model disagreements: {len(v.get('model_disagreements') or [])}{note}")
        for line in observed.disagreement_lines(v.get("model_disagreements")):
            print(f"{'':<{width}}  {line}")
        for line in stall_cause.check_lines(v):
            print(f"{'':<{width}}  {line}")
        if o.valid is None:
            inc = v.get("incomplete") or {}
            for why in inc.get("run") or []:
                print(f"{'':<{width}}  incomplete: {why}")
            for p, why in (inc.get("partitions") or {}).items():
                print(f"{'':<{width}}  incomplete: partition {p}: {why}")


def exit_code(outcomes: list[RunOutcome]) -> int:
    """2 if a run was unusable, else 1 if any run broke a rule, else 3 if any could not be judged, else 0."""
    codes = {o.exit_code for o in outcomes}
    for code in (EXIT_UNUSABLE, EXIT_VIOLATION, EXIT_INCOMPLETE):
        if code in codes:
            return code
    return EXIT_VALID


def check_run(path, force: bool = False, spark_master: str | None = None, engine: str = "spark",
              settings: CheckSettings = CheckSettings()) -> int:
    """Check one results directory (as at the end of every run); return the exit code.

    An unusable run raises HistoryError (exit 2, naming the file and column) so the caller sees why.
    """
    outcomes = check([Path(path)], force=force, spark_master=spark_master, engine=engine, table=False,
                     settings=settings)
    for o in outcomes:
        if o.status == "unusable":
            raise HistoryError(o.error)
    print_outcomes(outcomes)
    return exit_code(outcomes)


def check_many(paths: list, force: bool = False, spark_master: str | None = None, engine: str = "spark",
               settings: CheckSettings = CheckSettings(), as_json: bool = False,
               sources: dict[str, str] | None = None) -> int:
    with contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext():  # stdout: the JSON alone
        outcomes = check(list(paths), force=force, spark_master=spark_master, engine=engine, settings=settings,
                         sources=sources, release_spark=True)
    if as_json:
        print(json.dumps([{"run_id": o.run_id, "path": str(o.path), "status": o.status, "exit_code": o.exit_code,
                           "verdict": o.verdict, "error": o.error} for o in outcomes], indent=2))
        return exit_code(outcomes)
    print_outcomes(outcomes)
    if len(outcomes) == 1 and outcomes[0].status == "unusable":
        raise HistoryError(outcomes[0].error)
    return exit_code(outcomes)


__all__ = ["check", "check_run", "check_many", "find_runs", "CheckSettings", "RunOutcome", "HarnessError"]
