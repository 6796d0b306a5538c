"""Benchmark (not a test): the check on another JDK with an ahead-of-time cache, against the default JDK.

JDK 25 keeps, in one AOT cache file (JEP 483, 514, 515), the classes a training run loaded and linked and the
method profiles it gathered, so that a later JVM starts with them and its JIT can compile the hot methods sooner.
This script trains such a cache on JDK (the anomaly pass over a synthetic history of --train-sends sends, with the
driver options a check uses), then times `kafka-chaos check RUN --force` in fresh processes, alternating: the default
Java (JAVA_HOME or PATH, with its class-data archive from scripts/setup.sh) and JDK with the cache. The cache reaches
the driver's JVM only (spark-submit's --driver-java-options), not spark-submit's launcher.

    python bench/jdk_aot_ab.py /tmp/kafka-chaos-bench/bench-10000000-p12 --jdk /usr/lib/jvm/temurin-25-jdk-amd64
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRAIN = """
import sys
from kafka_chaos.checkers.spark.session import GC_OPTIONS, JIT_OPTIONS
from kafka_chaos.checkers.spark.cds import training_jvm
training_jvm(f"{JIT_OPTIONS} {GC_OPTIONS} -XX:AOTCacheOutput={sys.argv[1]} -Xlog:aot=off", int(sys.argv[2]))
"""


def timed_check(run: Path, env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run([str(ROOT / ".venv/bin/kafka-chaos"), "check", str(run), "--force"], env=env,
                         capture_output=True, text=True)
    if out.returncode > 3:
        sys.exit(f"check failed ({out.returncode}): {out.stderr[-2000:]}")
    verdict = next((line.split()[1] for line in out.stdout.splitlines() if line.startswith(run.name)), "?")
    return time.perf_counter() - start, verdict


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", type=Path, help="the results directory to check")
    ap.add_argument("--jdk", type=Path, required=True, help="the other JDK's home (JDK 25 or newer)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--train-sends", type=int, default=1_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kc-aot-") as tmp:
        cache = Path(tmp) / "driver.aot"
        other = os.environ | {"JAVA_HOME": str(args.jdk)}
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", TRAIN, str(cache), str(args.train_sends)], env=other, check=True,
                       capture_output=True)
        if not cache.is_file():
            sys.exit(f"{args.jdk} wrote no AOT cache (JDK 25 or newer needed)")
        print(f"trained {cache.stat().st_size >> 20} MB in {time.perf_counter() - t0:.1f} s", flush=True)
        other["PYSPARK_SUBMIT_ARGS"] = f"--driver-java-options '-XX:AOTCache={cache} -Xlog:aot=off' pyspark-shell"
        other["KAFKA_CHAOS_SPARK_CDS"] = "0"     # the cache holds the classes; a JVM refuses a CDS archive beside it
        for i in range(1, args.rounds + 1):
            for name, env in (("default", dict(os.environ)), (f"{args.jdk.name}+aot", other)):
                seconds, verdict = timed_check(args.run, env)
                print(f"round {i}  {name:<28} {seconds:6.1f} s  {verdict}  load {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
