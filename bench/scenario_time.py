"""Wall time of one 60 s scenario end to end with a warm image: up, workload, faults, drain, check, report, down.
Target: <= 120 s.

    .venv/bin/python bench/scenario_time.py [--scenario leader-kill] [--duration 60] [--acks all]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from kafka_chaos.harness.runner import RunOptions, run, summary_lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="leader-kill")
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--acks", default="all")
    ap.add_argument("--kafka-version")
    args = ap.parse_args()
    results = Path(tempfile.mkdtemp(prefix="kc-bench-"))
    t0 = time.perf_counter()
    result = run(RunOptions(scenario=args.scenario, acks=args.acks, duration_s=args.duration, seed=1,
                            kafka_version=args.kafka_version, results=results, live=False))
    wall = time.perf_counter() - t0
    for line in summary_lines(result):
        print(line)
    print(f"{args.scenario} acks={args.acks}, {args.duration:.0f} s of workload: {wall:.1f} s end to end "
          f"(up, workload, faults, drain, check, report, down); target <= 120 s")


if __name__ == "__main__":
    main()
