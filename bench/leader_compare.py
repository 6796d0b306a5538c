"""Audit helper (not a test): for every election the cluster samples show, did the ISR model elect the same broker?

The verdict's self-check (checkers/model/observed.py) compares unclean elections and high-watermark drops only. This
goes further by hand: each observed election (a new leader persisting two samples) is matched against the leader
events of the model's replays within the self-check's tolerance, and every election no replay chose is printed
with what the replays chose nearby. Each such line is a question for the model or the cluster, to be run down in
the run's node logs (README, "A quick restart is fenced").

    python bench/leader_compare.py results/ /tmp/other-results/
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka_chaos.checkers.check import _model_for, find_runs  # noqa: E402
from kafka_chaos.checkers.model.observed import TOLERANCE_NS, observed_events  # noqa: E402
from kafka_chaos.history.meta import HistoryError, load_meta  # noqa: E402
from kafka_chaos.history.reader import validate_run  # noqa: E402


def unmatched(run_dir: Path) -> tuple[int, list[str]]:
    """(observed elections, a line per election no replay of the model chose)."""
    meta = load_meta(run_dir)
    model, samples = _model_for(validate_run(run_dir), meta, run_dir)
    replays = [model, *getattr(model, "alternatives", ())]
    elections = [e for e in observed_events(samples) if e["event"] == "election"]
    lines = []
    for e in elections:
        p, t, leader = e["partition"], e["t_ns"], e["leader"]
        near = [x for r in replays for x in r.events if x.get("event") == "leader" and int(x["partition"]) == p
                and abs(int(x["t_ns"]) - t) <= TOLERANCE_NS]
        if not any(x.get("leader") is not None and int(x["leader"]) == leader for x in near):
            chose = sorted({(x.get("leader"), round((int(x["t_ns"]) - meta.start_ns) / 1e9, 1)) for x in near})
            lines.append(f"  partition {p} at {(t - meta.start_ns) / 1e9:.1f} s: the cluster elected {leader}, the "
                         f"model's replays {chose or 'nobody'}")
    return len(elections), lines


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
