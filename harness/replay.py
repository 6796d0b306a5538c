"""`kafka-chaos replay RESULTS_DIR [--tries N]`: the same run again, and whether the same anomalies came back.

A results directory says everything a run was: meta.json's `command` (scenario, profile, Kafka version, every
setting, the seed) and `schedule.json` (the resolved fault plan, each step with its own seed). Replay rebuilds the
RunOptions from the command through `run`'s own parser, plays the recorded plan, and compares each try's anomaly
kinds with the original's. The rate and the partition of each send follow from the command (`--rate`; round-robin
by sequence number), the replica layout and the fault targets from the seed; what remains is timing (when a
broker notices, how many sends are in flight), so over N tries replay says how often each kind recurred.
"""
from __future__ import annotations

import argparse
import json
import logging
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafka_chaos.base.errors import UsageError
from kafka_chaos.harness.live import LiveDisplay
from kafka_chaos.harness.run_options import RunOptions
from kafka_chaos.harness.runner import RunResult, cluster_for, run
from kafka_chaos.history.meta import read_meta_dict
from kafka_chaos.history.schema import ANOMALY_KINDS
from kafka_chaos.nemesis import schedule_data

log = logging.getLogger(__name__)
NOT_DEFECTS = ("stall", "recovered")      # timing-bound or not an anomaly: never part of a run's signature
TARGETS = ("violation", "disagreement") + ANOMALY_KINDS


@dataclass
class Recorded:
    """A finished run as its results directory tells it."""
    run_dir: Path
    meta: dict
    verdict: dict | None
    schedule: Path | None            # schedule.json, when the run wrote one

    @classmethod
    def load(cls, run_dir: Path | str) -> "Recorded":
        run_dir = Path(run_dir)
        meta = read_meta_dict(run_dir)
        if meta is None:
            raise UsageError(f"{run_dir} is not a results directory (no meta.json)",
                             "pass a run's directory, e.g. results/<run_id>")
        if not meta.get("command"):
            raise UsageError(f"{run_dir}/meta.json records no command",
                             "only runs of `kafka-chaos run` can be replayed")
        vf = run_dir / "verdict.json"
        verdict = json.loads(vf.read_text()) if vf.is_file() else None
        sched = run_dir / schedule_data.SCHEDULE_FILE
        return cls(run_dir, meta, verdict, sched if sched.is_file() else None)

    @property
    def run_id(self) -> str:
        return str(self.meta.get("run_id") or self.run_dir.name)

    def options(self, results: Path, schedule: Path | None = None, engine: str | None = None) -> RunOptions:
        """The run's options from its command; its own plan (or `schedule`) played, results under `results`."""
        opts = options_from_command(self.meta["command"])
        plan = schedule or self.schedule
        if plan is None and opts.schedule_file is not None and not Path(opts.schedule_file).is_file():
            raise UsageError(f"{self.run_dir} has no schedule.json and its --schedule file "
                             f"{opts.schedule_file} is gone", "restore the schedule file")
        return replace(opts, schedule_file=plan or opts.schedule_file, results=results, run_id=None,
                       reuse_cluster=False, keep_cluster=False, engine=engine or opts.engine)


def options_from_command(command: str) -> RunOptions:
    """RunOptions from a recorded `kafka-chaos run ...` line, through `run`'s own parser."""
    from kafka_chaos.harness import run_cli

    argv = shlex.split(command)
    if len(argv) < 2 or argv[1] != "run":
        raise UsageError(f"recorded command is not `kafka-chaos run ...`: {command}",
                         "replay runs of `kafka-chaos run`")
    parser = argparse.ArgumentParser(prog="kafka-chaos", add_help=False)
    run_cli.register(parser.add_subparsers(dest="command"))
    try:
        args = parser.parse_args(argv[1:])
    except SystemExit:
        raise UsageError(f"cannot parse the recorded command: {command}",
                         "this kafka-chaos no longer takes one of its options; run it by hand") from None
    return run_cli.options_from_args(args)


def signature(verdict: dict | None) -> set[str]:
    """What a run showed: its anomaly kinds (not stalls or recoveries), 'violation', 'disagreement'."""
    if not verdict:
        return set()
    kinds = {k for k, n in (verdict.get("anomalies") or {}).items() if n and k not in NOT_DEFECTS}
    if verdict.get("valid") is False:
        kinds.add("violation")
    if verdict.get("model_disagreements"):
        kinds.add("disagreement")
    return kinds


def matches(verdict: dict | None, target: str) -> bool:
    """Whether a verdict shows `target`: 'violation', 'disagreement' or an anomaly kind."""
    if target not in TARGETS:
        raise UsageError(f"unknown target '{target}'", f"use one of: {', '.join(TARGETS)}")
    if not verdict:
        return False
    if target == "violation":
        return verdict.get("valid") is False
    if target == "disagreement":
        return bool(verdict.get("model_disagreements"))
    return bool((verdict.get("anomalies") or {}).get(target))


class Trials:
    """Runs on one cluster, started by the first run and brought back to the baseline between runs (as --repeat
    does); removed on close. A context manager, so the cluster goes on every exit path."""

    def __init__(self):
        self.cluster = None
        self.owned = False
        self.count = 0

    def run(self, opts: RunOptions) -> RunResult:
        from kafka_chaos.harness.repeat import _healthy

        if self.cluster is None:
            self.cluster, self.owned = cluster_for(opts.resolved(), LiveDisplay(enabled=False))
        elif self.count:
            self.cluster = _healthy(self.cluster, self.owned, opts)
        self.count += 1
        return run(opts, cluster=self.cluster)

    def close(self) -> None:
        if self.cluster is not None and self.owned:
            self.cluster.down()
        self.cluster = None

    def __enter__(self) -> "Trials":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class ReplayOutcome:
    original: set[str]
    tries: list[tuple[Path, set[str], int]] = field(default_factory=list)    # (run dir, kinds, exit code)

    def recurred(self, kind: str) -> int:
        return sum(kind in kinds for _, kinds, _ in self.tries)

    @property
    def all_back(self) -> int:
        """Tries in which every kind of the original came back."""
        return sum(self.original <= kinds for _, kinds, _ in self.tries)

    def as_dict(self) -> dict:
        return {"original": sorted(self.original), "tries": len(self.tries), "all_back": self.all_back,
                "recurred": {k: self.recurred(k) for k in sorted(self.original)},
                "runs": [{"dir": str(d), "kinds": sorted(k), "exit": c} for d, k, c in self.tries]}

    def lines(self) -> list[str]:
        n = len(self.tries)
        out = [f"original: {', '.join(sorted(self.original)) or 'no anomaly'}"]
        for i, (d, kinds, code) in enumerate(self.tries, 1):
            out.append(f"try {i}: {', '.join(sorted(kinds)) or 'no anomaly'} (exit {code}) {d}")
        for k in sorted(self.original):
            out.append(f"{k}: came back in {self.recurred(k)} of {n} tries")
        new = sorted(set().union(*(k for _, k, _ in self.tries)) - self.original) if self.tries else []
        if new:
            out.append(f"not in the original: {', '.join(f'{k} ({self.recurred(k)} of {n})' for k in new)}")
        same = "the same anomaly kinds came back" if self.all_back == n else \
            f"the same anomaly kinds came back in {self.all_back} of {n} tries"
        out.append(same if self.original else f"{sum(not k for _, k, _ in self.tries)} of {n} tries without anomaly")
        return out


def replay(run_dir: Path | str, tries: int = 1, results: Path | None = None, engine: str | None = None,
           live: bool | None = None) -> ReplayOutcome:
    """Run the recorded run `tries` times on one cluster; results go to <results>/<run_id>.replay/."""
    if tries < 1:
        raise UsageError(f"--tries {tries}: must be 1 or more", "use --tries 3")
    rec = Recorded.load(run_dir)
    root = (results or rec.run_dir.parent) / f"{rec.run_id}.replay"
    base = replace(rec.options(root, engine=engine), live=live)
    outcome = ReplayOutcome(signature(rec.verdict))
    with Trials() as trials:
        for i in range(tries):
            result = trials.run(replace(base, run_id=f"{rec.run_id}-r{i + 1}"))
            outcome.tries.append((result.run_dir, signature(result.verdict), result.exit_code))
    root.mkdir(parents=True, exist_ok=True)
    (root / "replay.json").write_text(json.dumps(outcome.as_dict(), indent=2) + "\n")
    return outcome


def register(sub) -> None:
    p = sub.add_parser("replay", help="run a finished run again (same scenario, settings, seed and fault plan) "
                                      "and say whether the same anomaly kinds came back",
                       description="Exit: the worst try's, as `run --repeat` (1 if any try broke a guarantee).")
    p.add_argument("run_dir", type=Path, metavar="RESULTS_DIR")
    p.add_argument("--tries", type=int, default=1, help="how many times (on one cluster; default 1)")
    p.add_argument("--results", type=Path, help="where <run_id>.replay/ goes (default: beside RESULTS_DIR)")
    p.add_argument("--engine", choices=("spark", "pandas"), help="the checker's engine (default: the run's)")
    p.set_defaults(func=_cmd_replay)


def _cmd_replay(args) -> int:
    outcome = replay(args.run_dir, args.tries, args.results, args.engine)
    for line in outcome.lines():
        print(line)
    codes = [c for _, _, c in outcome.tries]
    return 1 if 1 in codes else 3 if 3 in codes else max(codes, default=0)
