#!/usr/bin/env bash
# The README's test command: set up what the tests need (idempotently), then run the suite against real brokers.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k cluster`.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/setup.sh" --test
cd "$ROOT"
exec "${KAFKA_CHAOS_VENV:-$ROOT/.venv}/bin/python" -m pytest -p no:cacheprovider "$@"
