"""`kafka-chaos shrink RESULTS_DIR`: the smallest fault plan that still reproduces a run's anomaly.

The search (harness.shrink_search) is given an `evaluate` that runs a candidate plan for real: the run's own
settings and seed (from its command), the candidate written as a schedule file, the run's duration cut to the
candidate's last heal plus the original's fault-free tail, on one cluster for the whole search (reset between runs
as --repeat does), checked with the pandas engine by default (quicker for short runs). Everything goes to
<results>/<run_id>.shrink/: candidates/ (each plan tried), runs/ (each run), schedule.json (the smallest),
test_repro_<run_id>.py and shrink-report.md.
"""
from __future__ import annotations

import itertools
import logging
import re
from dataclasses import replace
from pathlib import Path

from kafka_chaos.base.errors import UsageError
from kafka_chaos.harness import repro
from kafka_chaos.harness.replay import TARGETS, Recorded, Trials, matches, signature
from kafka_chaos.harness.shrink_search import SearchConfig, SearchResult, plan_key, shrink, span_s
from kafka_chaos.nemesis import schedule_data

log = logging.getLogger(__name__)
MIN_TAIL_S = 10.0        # fault-free seconds after the last heal, at least: the cluster settles before the drain


def default_target(verdict: dict | None) -> str:
    if verdict and verdict.get("valid") is False:
        return "violation"
    if verdict and verdict.get("model_disagreements"):
        return "disagreement"
    raise UsageError("the run broke no guarantee and has no model disagreement: nothing to shrink by default",
                     f"name what to keep with --target (one of: {', '.join(TARGETS)})")


def parse_budget(text: str) -> float:
    """'30m', '2h', '90s' or plain seconds -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", str(text))
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"--budget {text}: not a duration", "use e.g. --budget 30m, 2h or 900s")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def original_steps(rec: Recorded, opts) -> list:
    """The run's plan: its schedule.json, else re-planned from its scenario and seed (older runs)."""
    if rec.schedule is not None:
        return list(schedule_data.read(rec.schedule).steps)
    return opts.resolved().plan()


class RealEvaluate:
    """evaluate(steps) -> bool by a real run of the candidate; keeps a row per run for the report."""

    def __init__(self, trials: Trials, base, out: Path, run_id: str, target: str, tail_s: float):
        self.trials, self.base, self.out, self.run_id = trials, base, out, run_id
        self.target, self.tail_s = target, tail_s
        self.numbers = itertools.count(1)
        self.rows: list[dict] = []

    def __call__(self, steps) -> bool:
        n = next(self.numbers)
        duration = round(span_s(steps) + self.tail_s, 1)
        plan = schedule_data.write(self.out / "candidates" / f"c{n:03d}.json", steps, self.base.scenario,
                                   self.base.seed, duration)
        result = self.trials.run(replace(self.base, schedule_file=plan, duration_s=duration,
                                         run_id=f"{self.run_id}-c{n:03d}"))
        hit = matches(result.verdict, self.target)
        self.rows.append({"n": n, "key": plan_key(steps), "steps": len(steps), "span_s": span_s(steps),
                          "duration_s": duration, "matched": hit, "kinds": sorted(signature(result.verdict)),
                          "dir": str(result.run_dir), "phase": ""})
        return hit


def shrink_run(run_dir: Path | str, target: str | None = None, budget_s: float = 1800.0, retries: int = 2,
               engine: str = "pandas", results: Path | None = None, test_tries: int = 3) -> tuple[SearchResult, Path]:
    """Shrink the run's plan; returns the search result and the output directory."""
    if retries < 1:
        raise UsageError(f"--retries {retries}: must be 1 or more", "use --retries 2")
    rec = Recorded.load(run_dir)
    target = target or default_target(rec.verdict)
    if target not in TARGETS:
        raise UsageError(f"--target {target}: unknown", f"use one of: {', '.join(TARGETS)}")
    if rec.verdict is not None and not matches(rec.verdict, target):
        raise UsageError(f"{rec.run_dir} does not show {target} (its kinds: "
                         f"{', '.join(sorted(signature(rec.verdict))) or 'none'})", "pick a --target the run shows")
    out = (results or rec.run_dir.parent) / f"{rec.run_id}.shrink"
    base = replace(rec.options(out / "runs", engine=engine), live=False)
    steps = original_steps(rec, replace(base))
    if not steps:
        raise UsageError(f"{rec.run_dir}'s fault plan has no step", "nothing to shrink")
    duration = base.resolved().duration_s
    tail = max(duration - span_s(steps), MIN_TAIL_S)
    with Trials() as trials:
        evaluate = RealEvaluate(trials, base, out, rec.run_id, target, tail)
        result = shrink(steps, evaluate, SearchConfig(budget_s=budget_s, retries=retries))
    phases = {plan_key(a.steps): a.phase for a in result.attempts}
    for row in evaluate.rows:
        row["phase"] = phases.get(row.pop("key"), "")
    plan = schedule_data.to_dict(result.smallest, base.scenario, base.seed,
                                 round(span_s(result.smallest) + tail, 1))
    schedule_data.write(out / schedule_data.SCHEDULE_FILE, result.smallest, base.scenario, base.seed,
                        plan["duration_s"])
    repro.write_test(out, rec.run_id, rec.meta["command"], target, plan, result, test_tries)
    repro.write_report(out, rec.run_id, target, result, evaluate.rows, budget_s, retries)
    return result, out


def register(sub) -> None:
    p = sub.add_parser("shrink", help="search for a smaller fault plan that still reproduces a run's anomaly; "
                                      "writes it as a pytest file and a one-page report",
                       description="Drops steps (delta debugging), shortens windows and moves steps closer, "
                                   "running each candidate for real (up to --retries times), until --budget is "
                                   "spent. Exit 0 when done, whether or not a smaller plan was found.")
    p.add_argument("run_dir", type=Path, metavar="RESULTS_DIR")
    p.add_argument("--target", help="what must recur: violation (default when the run has one), disagreement, "
                                    "or an anomaly kind such as lost")
    p.add_argument("--budget", default="30m", help="time for the whole search, e.g. 30m, 2h (default 30m)")
    p.add_argument("--retries", type=int, default=2, help="tries per candidate (timing varies; default 2)")
    p.add_argument("--engine", choices=("spark", "pandas"), default="pandas", help="the checker's engine "
                   "(default pandas: quicker for the short runs a search makes)")
    p.add_argument("--results", type=Path, help="where <run_id>.shrink/ goes (default: beside RESULTS_DIR)")
    p.add_argument("--test-tries", type=int, default=3, help="tries the generated pytest gives the plan (default 3)")
    p.set_defaults(func=_cmd_shrink)


def _cmd_shrink(args) -> int:
    result, out = shrink_run(args.run_dir, args.target, parse_budget(args.budget), args.retries, args.engine,
                             args.results, args.test_tries)
    print(f"{len(result.original)} step(s), {span_s(result.original):.1f} s of faults -> "
          f"{len(result.smallest)} step(s), {span_s(result.smallest):.1f} s after {result.tries} run(s) in "
          f"{result.elapsed_s / 60:.1f} min{' (budget spent)' if result.budget_spent else ''}")
    for line in repro.step_lines(result.smallest):
        print("  " + line)
    print(f"test: {out / (repro.repro_test_name(Recorded.load(args.run_dir).run_id) + '.py')}")
    print(f"report: {out / 'shrink-report.md'}")
    if not result.reduced:
        print("no smaller plan reproduced: the test replays the original plan")
    return 0
