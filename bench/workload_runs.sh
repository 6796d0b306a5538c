#!/usr/bin/env bash
# The evidence behind docs/findings.md's table of each workload's real runs: each workload beyond one librdkafka
# producer (the Java client, a consumer group committing auto and manual, transactions) under leader-kill and
# leader-isolate, one run at a time on one chaos cluster (started by the first run, reused by the others, removed
# at the end), judged with pandas; then `--client both` on leader-isolate --acks 1; then a group member killed
# (consumer-and-leader-kill) with each commit mode. Runs given after SEED replace the list, e.g.
#   bash bench/workload_runs.sh results/workloads [DURATION] [SEED] ["consumer-and-leader-kill --consumer-mode subscribe --commit auto" ...]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/workloads}
DURATION=${2:-35}
SEED=${3:-16}
NAME="h16b-workloads"
mkdir -p "$OUT"
trap '.venv/bin/kafka-chaos cluster down --name "$NAME" >/dev/null 2>&1 || true' EXIT
runs=(
  "leader-kill --client java"
  "leader-isolate --client java"
  "leader-kill --consumer-mode subscribe --commit auto"
  "leader-isolate --consumer-mode subscribe --commit manual"
  "leader-kill --transactions"
  "leader-isolate --transactions"
  "leader-isolate --acks 1 --client both"
  "consumer-and-leader-kill --consumer-mode subscribe --commit auto"
  "consumer-and-leader-kill --consumer-mode subscribe --commit manual"
)
if [ $# -gt 3 ]; then runs=("${@:4}"); fi
for r in "${runs[@]}"; do
  echo "=== $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg) :: $r"
  # shellcheck disable=SC2086
  .venv/bin/kafka-chaos run $r --seed "$SEED" --duration "$DURATION" --reuse-cluster --name "$NAME" \
    --results "$OUT" --engine pandas 2>&1 | grep -E "^(verdict|sends|results|  (librdkafka|java))" || true
done
.venv/bin/python bench/verdict_table.py "$OUT" || true
