#!/usr/bin/env bash
# docs/findings.md's "Historical bugs" evidence for KAFKA-19522 (a fenced last known leader elected, 4.0.x, fixed in
# 4.1.0): cascade-kill-serial with eligible leader replicas on, on each release given, one cluster at a time (started
# by the run, kept for the metadata-log read, removed at the end), then the controller's metadata log searched for
# partition changes that elected a fenced broker (bench/fenced_elections.py).
#   bash bench/historical_bugs.sh results/historical 50 4.0.0 4.1.0
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?results dir}
DURATION=${2:?seconds}
shift 2
mkdir -p "$OUT"
for V in "$@"; do
  NAME="hb-${V//./}"
  trap '.venv/bin/kafka-chaos cluster down --name "$NAME" >/dev/null 2>&1 || true' EXIT
  echo "=== $(date -u +%T) Kafka $V cascade-kill-serial --elr acks=all min.insync.replicas=2, load $(cut -d' ' -f1-3 /proc/loadavg)"
  .venv/bin/kafka-chaos run cascade-kill-serial --kafka-version "$V" --elr --acks all --min-isr 2 --seed 1 \
    --duration "$DURATION" --reuse-cluster --name "$NAME" --results "$OUT/$V" --engine pandas 2>&1 \
    | grep -E "^(verdict|sends|report)" || true
  .venv/bin/python bench/fenced_elections.py "$NAME" "$OUT/$V/metadata-log.txt" || true
  .venv/bin/kafka-chaos cluster down --name "$NAME" >/dev/null 2>&1 || true
  trap - EXIT
done
