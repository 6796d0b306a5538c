"""Benchmark helper (not a test): where the Spark check's time goes, job by job, from Spark's own event log.

Runs the anomaly pass (checkers.spark.anomalies.find_anomalies_spark) on one results directory in a fresh session that
writes an event log, then prints, per job label (the description checkers.spark.collect.to_pandas gives each
collect), the executor CPU seconds, the tasks' run time and the wall time from submission to end, plus the
session start, the pass's wall time and the total executor CPU. CPU seconds move less with the machine's load than
wall time does, so they are the figure to compare when the machine is not idle.

    python bench/spark_profile.py /tmp/kafka-chaos-bench/bench-10000000-p12
    python bench/spark_profile.py RUN --conf spark.shuffle.compress=false     # try a setting
    python bench/spark_profile.py RUN --no-narrowing     # every row through the per-value pass, as on a dense history
    python bench/spark_profile.py RUN --timeline         # each job's start and end: the critical path, the idle gaps
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def parse_event_log(path: Path) -> tuple[dict[str, dict[str, float]], float]:
    """{label: {cpu_s, run_s, wall_s, jobs}} and the total executor CPU seconds."""
    job_label, stage_job, job_times = {}, {}, {}
    rows: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(
        ("cpu_s", "run_s", "wall_s", "jobs", "gc_s", "shuffle_mb", "shuffle_write_s", "spill_mb", "tasks"), 0.0))
    total = 0.0
    for line in path.read_text().splitlines():
        e = json.loads(line)
        kind = e["Event"]
        if kind == "SparkListenerJobStart":
            props = e.get("Properties") or {}
            job_label[e["Job ID"]] = props.get("spark.job.description") or "(unlabelled)"
            job_times[e["Job ID"]] = e["Submission Time"]
            for sid in e.get("Stage IDs", []):
                stage_job.setdefault(sid, e["Job ID"])
        elif kind == "SparkListenerJobEnd":
            label = job_label.get(e["Job ID"], "(unlabelled)")
            rows[label]["wall_s"] += (e["Completion Time"] - job_times.get(e["Job ID"], e["Completion Time"])) / 1e3
            rows[label]["jobs"] += 1
        elif kind == "SparkListenerTaskEnd":
            metrics = e.get("Task Metrics") or {}
            label = job_label.get(stage_job.get(e["Stage ID"]), "(unlabelled)")
            cpu = metrics.get("Executor CPU Time", 0) / 1e9
            rows[label]["cpu_s"] += cpu
            rows[label]["run_s"] += metrics.get("Executor Run Time", 0) / 1e3
            rows[label]["gc_s"] += metrics.get("JVM GC Time", 0) / 1e3
            write = metrics.get("Shuffle Write Metrics") or {}
            rows[label]["shuffle_mb"] += write.get("Shuffle Bytes Written", 0) / 2**20
            rows[label]["shuffle_write_s"] += write.get("Shuffle Write Time", 0) / 1e9
            rows[label]["spill_mb"] += metrics.get("Disk Bytes Spilled", 0) / 2**20
            rows[label]["tasks"] += 1
            total += cpu
    return dict(rows), total


def job_timeline(path: Path) -> list[tuple[float, float, str]]:
    """(submitted, completed, label) per job in epoch seconds, in submission order."""
    label, start, out = {}, {}, []
    for line in path.read_text().splitlines():
        e = json.loads(line)
        if e["Event"] == "SparkListenerJobStart":
            label[e["Job ID"]] = (e.get("Properties") or {}).get("spark.job.description") or "(unlabelled)"
            start[e["Job ID"]] = e["Submission Time"] / 1e3
        elif e["Event"] == "SparkListenerJobEnd" and e["Job ID"] in start:
            out.append((start[e["Job ID"]], e["Completion Time"] / 1e3, label[e["Job ID"]]))
    return sorted(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="a results directory")
    ap.add_argument("--conf", action="append", default=[], help="KEY=VALUE, a Spark setting to try")
    ap.add_argument("--no-narrowing", action="store_true",
                    help="send the whole history through the per-value pass even where the bucket sums would narrow "
                         "it (checkers/spark/buckets.py): what a clean history would cost if its anomalies were spread")
    ap.add_argument("--timeline", action="store_true", help="also each job's start and end, from the pass's start")
    args = ap.parse_args()
    log_dir = Path(tempfile.mkdtemp(prefix="kc-spark-profile-"))
    os.environ["KAFKA_CHAOS_SPARK_EVENT_LOG"] = str(log_dir)
    from kafka_chaos.checkers.spark import buckets
    from kafka_chaos.checkers.spark import session as spark_factory
    from kafka_chaos.checkers.spark.anomalies import find_anomalies_spark
    if args.no_narrowing:
        buckets.MAX_UNCLEAN_SHARE = -1.0       # no share of unclean buckets is small enough: never narrow

    extra = dict(kv.partition("=")[::2] for kv in args.conf)
    project_config = spark_factory.session_config
    spark_factory.session_config = lambda *a, **k: project_config(*a, **k) | extra    # the settings to try
    t0 = time.perf_counter()
    spark = spark_factory.get_spark()
    t1, epoch1 = time.perf_counter(), time.time()
    findings = find_anomalies_spark(spark, {"run": args.run})
    t2 = time.perf_counter()
    spark.stop()
    log = next(log_dir.iterdir())
    rows, total = parse_event_log(log)
    print(f"session start {t1 - t0:.1f} s, anomaly pass {t2 - t1:.1f} s, executor CPU {total:.1f} s, "
          f"load {os.getloadavg()[0]:.1f}, instances {len(findings.instances)}")
    print(f"{'job':<36} {'jobs':>4} {'tasks':>5} {'cpu s':>7} {'task s':>7} {'wall s':>7} {'gc s':>6} "
          f"{'shuf MB':>8} {'shuf w s':>8} {'spill MB':>8}")
    for label, r in sorted(rows.items(), key=lambda kv: -kv[1]["cpu_s"]):
        print(f"{label:<36} {int(r['jobs']):>4} {int(r['tasks']):>5} {r['cpu_s']:>7.1f} {r['run_s']:>7.1f} "
              f"{r['wall_s']:>7.1f} {r['gc_s']:>6.1f} {r['shuffle_mb']:>8.0f} {r['shuffle_write_s']:>8.1f} "
              f"{r['spill_mb']:>8.0f}")
    if args.timeline:
        print(f"\n{'start s':>8} {'end s':>8}  job   (seconds from the pass's start; {t2 - t1:.1f} s in all)")
        for a, b, label in job_timeline(log):
            print(f"{a - epoch1:>8.1f} {b - epoch1:>8.1f}  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
