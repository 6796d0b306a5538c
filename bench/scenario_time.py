"""Wall time of one 60 s scenario end to end with a warm image: up, workload, faults, drain, check, report, down,
and where it goes (seconds per phase). Target: <= 80 s. `--repeat N` times `kafka-chaos run --repeat N`: one cluster
and one Spark session for N runs with seeds 1..N.

    .venv/bin/python bench/scenario_time.py [--scenario leader-kill] [--duration 60] [--acks all] [--repeat 2]
"""
from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from pathlib import Path

from kafka_chaos.harness.repeat import run_repeated
from kafka_chaos.harness.runner import RunOptions, run, summary_lines


def phases_line(phases: dict[str, float]) -> str:
    return ", ".join(f"{name} {s:.1f}" for name, s in phases.items()) + f"; sum {sum(phases.values()):.1f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="leader-kill")
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--acks", default="all")
    ap.add_argument("--kafka-version")
    ap.add_argument("--repeat", type=int, help="N runs in one process, as `kafka-chaos run --repeat N`")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    results = Path(tempfile.mkdtemp(prefix="kc-bench-"))
    opts = RunOptions(scenario=args.scenario, acks=args.acks, duration_s=args.duration, seed=1,
                      kafka_version=args.kafka_version, results=results, live=False)
    t0 = time.perf_counter()
    if args.repeat:
        series = run_repeated(opts, args.repeat)
        wall = time.perf_counter() - t0
        print(f"cluster up (once): {series.cluster_up_s:.1f} s")
        for i, r in enumerate(series.results, 1):
            print(f"run {i}: {phases_line(r.phases)}")
        print(f"{args.scenario} acks={args.acks}, {args.repeat} x {args.duration:.0f} s of workload: {wall:.1f} s "
              f"end to end, {wall / args.repeat:.1f} s per run (load {os.getloadavg()[0]:.1f})")
        return
    result = run(opts)
    wall = time.perf_counter() - t0
    for line in summary_lines(result):
        print(line)
    print(f"phases: {phases_line(result.phases)}")
    print(f"{args.scenario} acks={args.acks}, {args.duration:.0f} s of workload: {wall:.1f} s end to end "
          f"(up, workload, faults, drain, check, report, down; load {os.getloadavg()[0]:.1f}); target <= 80 s")


if __name__ == "__main__":
    main()
