"""Benchmark (not a test): single checker queries against their plain formulations, warm, in one Spark session.

What it times, alternating, N rounds (the first round pays the JIT; read the later ones):
  doubles plain:   group every acked send by position, keep positions with two or more;
  doubles bitmap:  spark.hub.crowded_buckets + double_acked (what the check does);
  buckets plain:   ack islands and pending islands as two queries;
  buckets merged:  spark.queries.availability_buckets (one scan, what the check does);
  bucket sums:     spark.buckets.bucket_sums over sends and reads (what the check does first);
  <window> exchanged / one task: nonmonotonic sends, poll gaps and availability buckets with their exchanges, and
                   in one task each (spark.queries.one_task: what a local check up to anomalies.ONE_TASK_ROWS does).
Each line gives the wall time and the JVM's CPU seconds (user + system, from /proc): the first round against the
later ones is what a check, which runs every query once in a fresh JVM, pays for the JIT's warm-up.

    python bench/query_bench.py /tmp/kafka-chaos-bench/bench-10000000-p12 [--rounds 3] [--cases "bucket sums"]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from pyspark.sql import functions as F

from kafka_chaos.checkers.availability import BUCKET_NS, NEVER
from kafka_chaos.checkers.spark import buckets as spark_buckets
from kafka_chaos.checkers.spark import divergent as spark_divergent
from kafka_chaos.checkers.spark import get_spark
from kafka_chaos.checkers.spark import queries as q
from kafka_chaos.checkers.spark.collect import READ_COLUMNS, SEND_COLUMNS, load, to_pandas
from kafka_chaos.history.schema import ACKED


def plain_doubles(sends):
    placed = sends.where(F.col("partition").isNotNull() & (F.col("offset") >= 0))
    return to_pandas(placed.groupBy("run", "partition", "offset").count().where(F.col("count") >= 2))


def plain_buckets(sends):
    def islands(rows, key, first, last):
        b = rows.groupBy("run", "partition", F.expr(f"{key} div {BUCKET_NS}").alias("b")) \
            .agg(F.min(first).alias("first"), F.max(last).alias("last")).drop("b")
        return to_pandas(q.islands(b, BUCKET_NS))
    acked = sends.where(F.col("acks").isin(*ACKED) & F.col("partition").isNotNull())
    return (islands(acked.where(F.col("outcome") == "ok"), "t_complete_ns", "t_complete_ns", "t_complete_ns"),
            islands(acked, "t_invoke_ns", "t_invoke_ns", F.coalesce(F.col("t_complete_ns"), F.lit(NEVER))))


def jvm_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cases", nargs="+", help="only these cases (default: all)")
    args = ap.parse_args()
    spark = get_spark()
    jvm = int(spark.sparkContext._jvm.ProcessHandle.current().pid())
    sends = load(spark, {"run": args.run}, "sends.parquet", SEND_COLUMNS)
    reads = load(spark, {"run": args.run}, "reads.parquet", READ_COLUMNS)
    cases = {
        "doubles plain": lambda: plain_doubles(sends),
        "doubles bitmap": lambda: spark_divergent.double_acked(spark, sends, set()),
        "buckets plain": lambda: plain_buckets(sends),
        "buckets merged": lambda: to_pandas(q.availability_buckets(sends, BUCKET_NS, NEVER)),
        "bucket sums": lambda: to_pandas(spark_buckets.bucket_sums(sends, reads)),
    }
    for gather, how in ((False, "exchanged"), (True, "one task")):
        cases |= {f"mono {how}": lambda g=gather: to_pandas(q.nonmonotonic_sends(sends, g)),
                  f"gaps {how}": lambda g=gather: to_pandas(q.poll_gaps(reads, g)),
                  f"avail {how}": lambda g=gather: to_pandas(q.availability_buckets(sends, BUCKET_NS, NEVER, g))}
    unknown = set(args.cases or ()) - set(cases)
    if unknown:
        ap.error(f"unknown cases {sorted(unknown)}; known: {sorted(cases)}")
    chosen = {k: v for k, v in cases.items() if not args.cases or k in args.cases}
    for r in range(args.rounds):
        for name, case in chosen.items():
            t, cpu = time.perf_counter(), jvm_cpu_s(jvm)
            case()
            print(f"round {r}  {name:<18} {time.perf_counter() - t:6.2f} s  JVM CPU {jvm_cpu_s(jvm) - cpu:6.2f} s",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
