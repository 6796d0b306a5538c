#!/usr/bin/env bash
# Benchmark (not a test): `kafka-chaos check RUN --force` in fresh processes, alternating without and with the Spark
# driver's class-data archive (checkers/spark_cds.py; trained by scripts/setup.sh), ROUNDS times each.
#   bash bench/cds_ab.sh results/<run_id> [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUN=${1:?usage: bench/cds_ab.sh RESULTS_DIR [ROUNDS]}
ROUNDS=${2:-3}
KC="$ROOT/.venv/bin/kafka-chaos"
"$ROOT/.venv/bin/python" -m kafka_chaos.checkers.spark_cds >/dev/null 2>&1 || { echo "could not train the archive" >&2; exit 2; }
for i in $(seq 1 "$ROUNDS"); do
  for cds in 0 1; do
    start=$(date +%s.%N)
    KAFKA_CHAOS_SPARK_CDS=$cds "$KC" check "$RUN" --force >/dev/null 2>&1 || [ $? -le 3 ] || { echo "check failed" >&2; exit 2; }
    end=$(date +%s.%N)
    printf 'round %d  archive %s  %6.1f s  load %s\n' "$i" "$([ $cds = 1 ] && echo yes || echo no)" \
      "$(echo "$end - $start" | bc)" "$(cut -d' ' -f1 /proc/loadavg)"
  done
done
