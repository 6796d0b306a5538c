"""Benchmark (not a test): what the JIT's warm-up costs a cold anomaly pass.

In one fresh process: start Spark, optionally run the whole anomaly pass (checkers.spark.anomalies) on smaller histories
first, then on RUN; print the wall and JVM CPU seconds (user + system, /proc) of the warm-up and of RUN's pass.
Alternate it with and without a warm-up in fresh processes: RUN's pass after a warm-up against a cold one is what
the JIT's warm-up costs a check, and the warm-up's own time says how much of that is fixed (compiling) rather than
proportional to the data.

    python bench/warm_pass.py /tmp/kafka-chaos-bench/bench-10000000-p12
    python bench/warm_pass.py /tmp/kafka-chaos-bench/bench-10000000-p12 --warm /tmp/kafka-chaos-bench/bench-1000000-p12
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="the results directory to time")
    ap.add_argument("--warm", type=Path, nargs="*", default=[], help="results directories to run the pass on first")
    args = ap.parse_args()
    from query_bench import jvm_cpu_s  # bench/ is on the path when this runs as a script

    from kafka_chaos.checkers.spark import get_spark
    from kafka_chaos.checkers.spark.anomalies import find_anomalies_spark

    t0 = time.perf_counter()
    spark = get_spark()
    jvm = int(spark.sparkContext._jvm.ProcessHandle.current().pid())
    t1, c1 = time.perf_counter(), jvm_cpu_s(jvm)
    for i, warm in enumerate(args.warm):
        find_anomalies_spark(spark, {f"warm{i}": warm})
    t2, c2 = time.perf_counter(), jvm_cpu_s(jvm)
    find_anomalies_spark(spark, {"run": args.run})
    t3, c3 = time.perf_counter(), jvm_cpu_s(jvm)
    print(f"session start {t1 - t0:.1f} s; warm-up {t2 - t1:.1f} s, JVM CPU {c2 - c1:.1f} s; pass {t3 - t2:.1f} s, "
          f"JVM CPU {c3 - c2:.1f} s; warm-up + pass {t3 - t1:.1f} s; load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
