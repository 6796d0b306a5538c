#!/usr/bin/env bash
# The evidence behind docs/findings.md's ZooKeeper-mode and older-release tables: leader-kill, leader-isolate
# and cascade-kill with acks=1 and with acks=all min.insync.replicas=2 on one release and metadata mode, on one
# chaos cluster (started by the first run, reused by the others, removed at the end), judged with pandas.
#   bash bench/release_runs.sh 3.9.2 zookeeper results/releases [DURATION]
set -euo pipefail
cd "$(dirname "$0")/.."
V=${1:?Kafka version}
MODE=${2:?kraft or zookeeper}
OUT=${3:-results/releases}/$V-$MODE
DURATION=${4:-40}
NAME="rel-${V//./}-$MODE"
mkdir -p "$OUT"
trap '.venv/bin/kafka-chaos cluster down --name "$NAME" >/dev/null 2>&1 || true' EXIT
for sc in leader-kill leader-isolate cascade-kill; do
  for prof in "--acks 1 --min-isr 2" "--acks all --min-isr 2"; do
    echo "=== $(date +%T) $V $MODE $sc $prof"
    # shellcheck disable=SC2086
    .venv/bin/kafka-chaos run "$sc" $prof --kafka-version "$V" --metadata "$MODE" --seed 1 --duration "$DURATION" \
      --reuse-cluster --name "$NAME" --results "$OUT" --engine pandas 2>&1 | grep -E "^(verdict|sends|results)" || true
  done
done
.venv/bin/python bench/verdict_table.py "$OUT" || true
