"""Audit helper (not a test): for every election the cluster samples show, did the ISR model elect the same broker?

The same comparison as the verdict's `leader_mismatch` disagreements (checkers/model/elections.py), over many stored
runs at once and without the anomaly pass: a count of observed elections per run and a line for each one no replay
of the model chose, to be run down in the run's node logs (docs/findings.md, "A quick restart is fenced").

    python bench/leader_compare.py results/ /tmp/other-results/
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka_chaos.checkers.check import find_runs, model_for  # noqa: E402
from kafka_chaos.checkers.model.elections import leader_mismatches  # noqa: E402
from kafka_chaos.checkers.model.observed import observed_events  # noqa: E402
from kafka_chaos.history.meta import HistoryError, load_meta  # noqa: E402
from kafka_chaos.history.reader import validate_run  # noqa: E402


def unmatched(run_dir: Path) -> tuple[int, list[str]]:
    """(observed elections, a line per election no replay of the model chose)."""
    meta = load_meta(run_dir)
    model, samples = model_for(validate_run(run_dir), meta, run_dir)
    events = observed_events(samples)
    lines = [f"  partition {d['partition']} at {(d['t_ns'] - meta.start_ns) / 1e9:.1f} s: {d['detail']}"
             for d in leader_mismatches(model, samples, events)]
    return sum(e["event"] == "election" for e in events), lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", type=Path, help="results directories or folders of them")
    args = ap.parse_args()
    total = differ = 0
    for run_dir in find_runs(args.paths):
        try:
            n, lines = unmatched(run_dir)
        except HistoryError as e:
            print(f"{run_dir.name}: not usable ({e.cause})")
            continue
        total += n
        differ += len(lines)
        print(f"{run_dir.name}: {n} elections observed, {len(lines)} not chosen by the model")
        for line in lines:
            print(line)
    print(f"{total} elections, {differ} the model did not choose")
    return 0


if __name__ == "__main__":
    sys.exit(main())
