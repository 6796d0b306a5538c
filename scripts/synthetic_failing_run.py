"""A failing run for the documentation's picture when no real run failed: a synthetic history written through the
history contract (history/synthetic/: a clean run with a leader kill, plus injected anomalies Kafka's rules forbid),
judged by the real checker and drawn by the real report.

    .venv/bin/python scripts/synthetic_failing_run.py DIR     # then: scripts/screenshot_report.py DIR OUT.png

The picture's caption must say the run is synthetic.
"""
from __future__ import annotations

import sys
from pathlib import Path

from kafka_chaos.harness.cli import main as kafka_chaos
from kafka_chaos.history.synthetic import write_synthetic_run

INJECT = {"lost": 12, "phantom": 3}      # acked (acks=all) writes gone though read; values nobody sent


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = write_synthetic_run(Path(argv[0]), sends=120_000, seed=7, inject=INJECT, kafka_version="4.4.0")
    code = kafka_chaos(["check", str(out), "--engine", "pandas", "--force"])
    if code != 1:
        print(f"expected a violation (exit 1), got exit {code}", file=sys.stderr)
        return 1
    return kafka_chaos(["report", str(out)])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
