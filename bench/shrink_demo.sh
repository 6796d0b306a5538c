#!/usr/bin/env bash
# docs/findings.md's replay / shrink / soak figures, one real cluster at a time:
#   1. cascade-kill, acks=all, min.insync.replicas=1, unclean election, 40 s, seed 7;
#   2. shrink it with --target lost (budget 30 min, 2 tries per candidate);
#   3. run the generated test_repro_<run_id>.py with pytest;
#   4. replay the original twice;
#   5. a short soak (windows of 2 min for 6 min; the machine is shared, so minutes rather than hours).
#   bash bench/shrink_demo.sh [results/demo]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/demo}
mkdir -p "$OUT"
.venv/bin/kafka-chaos run cascade-kill --acks all --min-isr 1 --unclean --duration 40 --seed 7 --engine pandas \
  --results "$OUT" || true
RUN=
for d in "$OUT"/*-cascade-kill-acksall-isr1-s7; do RUN=$d; done      # the newest (names start with the time)
/usr/bin/time -v .venv/bin/kafka-chaos shrink "$RUN" --target lost --budget 30m --retries 2
.venv/bin/python -m pytest -q "$RUN.shrink"/test_repro_*.py
.venv/bin/kafka-chaos replay "$RUN" --tries 2 --engine pandas || true
/usr/bin/time -v .venv/bin/kafka-chaos soak --duration 6m --window 2m --keep-segments 1 --seed 3 --engine pandas \
  --results "$OUT" || true
