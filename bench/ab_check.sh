#!/usr/bin/env bash
# A/B of `kafka-chaos check` on one 10M-send synthetic history: this checkout against an older commit, alternating,
# N rounds. Usage: bash bench/ab_check.sh OLD_COMMIT [ROUNDS]   (run it on an otherwise idle machine)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OLD=${1:?give the commit to compare with}
ROUNDS=${2:-2}
PY="${KAFKA_CHAOS_VENV:-$ROOT/.venv}/bin/python"
WORK=${TMPDIR:-/tmp}/kc-ab
RUN=$WORK/run10m
mkdir -p "$WORK"
[ -d "$WORK/old" ] || git -C "$ROOT" worktree add -f --detach "$WORK/old" "$OLD" >/dev/null
git -C "$WORK/old" checkout -q --detach "$OLD"
(cd "$ROOT" && "$PY" -c "
from pathlib import Path
from kafka_chaos.history.synthetic import write_synthetic_run
p = Path('$RUN')
if not (p / 'meta.json').exists():
    write_synthetic_run(p, sends=10_000_000, partitions=12, seed=0, faults=True)
")
for i in $(seq "$ROUNDS"); do
  for side in new old; do
    dir=$ROOT; mod=kafka_chaos.harness.cli
    # the old side runs from its worktree by PYTHONPATH: only commits before the kafka_chaos namespace can (after
    # it, this venv's editable install would map kafka_chaos.* back to this checkout)
    if [ $side = old ]; then dir=$WORK/old; mod=harness.cli
      [ -d "$dir/kafka_chaos" ] && { echo "ab_check: $OLD has the kafka_chaos namespace; A/B it from its own venv" >&2; exit 2; }
    fi
    start=$(date +%s.%N)
    (cd "$dir" && PYTHONPATH=$dir "$PY" -c "import sys; from $mod import main; sys.exit(main(['check', '$RUN', '--force']))" \
      > "$WORK/$side-$i.log" 2>&1) || true
    end=$(date +%s.%N)
    echo "$side round $i: $(echo "$end - $start" | bc) s, load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
