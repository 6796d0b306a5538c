#!/usr/bin/env bash
# Benchmark (not a test): `kafka-chaos check RUN --force` in fresh processes, alternating with one of the check
# JVM's settings off and on, ROUNDS times each. SETTING: cds (the Spark driver's class-data archive,
# checkers/spark/cds.py, trained by scripts/setup.sh), jit (the driver's JIT thresholds, checkers/spark/session.py) or gc
# (the driver's collector: ParallelGC on, the JVM's default G1 off).
#   bash bench/jvm_ab.sh results/<run_id> [ROUNDS] [cds|jit|gc]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUN=${1:?usage: bench/jvm_ab.sh RESULTS_DIR [ROUNDS] [cds|jit|gc]}
ROUNDS=${2:-3}
case "${3:-cds}" in
  cds) VAR=KAFKA_CHAOS_SPARK_CDS ;;
  jit) VAR=KAFKA_CHAOS_SPARK_JIT ;;
  gc) VAR=KAFKA_CHAOS_SPARK_GC ;;
  *) echo "SETTING is cds, jit or gc" >&2; exit 2 ;;
esac
KC="$ROOT/.venv/bin/kafka-chaos"
"$ROOT/.venv/bin/python" -m kafka_chaos.checkers.spark.cds >/dev/null 2>&1 || { echo "could not train the archive" >&2; exit 2; }
for i in $(seq 1 "$ROUNDS"); do
  for on in 0 1; do
    start=$(date +%s.%N)
    env "$VAR=$on" "$KC" check "$RUN" --force >/dev/null 2>&1 || [ $? -le 3 ] || { echo "check failed" >&2; exit 2; }
    end=$(date +%s.%N)
    printf 'round %d  %s %s  %6.1f s  load %s\n' "$i" "${3:-cds}" "$([ $on = 1 ] && echo on || echo off)" \
      "$(echo "$end - $start" | bc)" "$(cut -d' ' -f1 /proc/loadavg)"
  done
done
