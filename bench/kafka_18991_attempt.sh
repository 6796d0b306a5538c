#!/usr/bin/env bash
# docs/findings.md's "Historical bugs" attempt at KAFKA-18991 (a follower acting on an older leader epoch's diverging end
# offset; fixed in 3.9.1, 4.0.1 and 4.1.0): bench/schedules/kafka-18991-attempt.json (leader isolations, which
# leave the old leader with an unreplicated acks=1 tail to truncate, each healed just before a reassignment of the
# same partition, which bumps the leader epoch while those truncating fetches are in flight), 4 brokers, one run
# per seed, one cluster at a time.
#   bash bench/kafka_18991_attempt.sh results/historical/kafka-18991 4.0.0 1 2
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?results dir}
V=${2:?Kafka version}
shift 2
for SEED in "$@"; do
  echo "=== $(date -u +%T) Kafka $V seed $SEED, load $(cut -d' ' -f1-3 /proc/loadavg)"
  .venv/bin/kafka-chaos run --schedule bench/schedules/kafka-18991-attempt.json --brokers 4 --kafka-version "$V" \
    --acks 1 --min-isr 2 --seed "$SEED" --duration 45 --results "$OUT/$V" --engine pandas 2>&1 \
    | grep -E "^(verdict|sends|report)" || true
done
