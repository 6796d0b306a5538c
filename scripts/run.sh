#!/usr/bin/env bash
# The README's main job: set up (idempotently), then run a chaos scenario against a local 3-broker KRaft cluster.
# Ends with results/<run_id>/ holding the history, verdict.json and report.html. Arguments replace the default
# scenario, e.g. `bash scripts/run.sh leader-kill --acks all --duration 120`.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh"
cd "$ROOT"
if [ $# -eq 0 ]; then set -- leader-isolate --acks 1 --min-isr 2 --duration 60; fi
exec "${KAFKA_CHAOS_VENV:-$ROOT/.venv}/bin/kafka-chaos" run "$@"
