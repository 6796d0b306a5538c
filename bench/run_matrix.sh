#!/usr/bin/env bash
# Real runs behind docs/findings.md's table: every catalog scenario x three profiles on one Kafka version, seed 1,
# histories only; then check them all in one Spark job and print the table.
#   bash bench/run_matrix.sh 4.4.0 results/matrix
set -euo pipefail
cd "$(dirname "$0")/.."
V=${1:?Kafka version}
OUT=${2:-results/matrix}/$V
mkdir -p "$OUT"
for sc in $(.venv/bin/kafka-chaos scenarios | awk '{print $1}'); do
  for prof in "--acks all --min-isr 2" "--acks 1 --min-isr 2" "--acks all --min-isr 1 --unclean"; do
    echo "=== $(date +%T) $sc $prof"
    # shellcheck disable=SC2086
    .venv/bin/kafka-chaos run "$sc" $prof --kafka-version "$V" --seed 1 --results "$OUT" --no-check 2>&1 | tail -1
  done
done
.venv/bin/kafka-chaos check "$OUT" --force || true
.venv/bin/python bench/verdict_table.py "$OUT"
