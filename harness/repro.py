"""What shrink leaves behind: a standalone pytest file that replays the smallest plan and asserts the anomaly
recurs, a one-page report of the steps, and `reproduce`, the one call that test makes.

The test carries everything in itself (the run's command and the plan as JSON), so it runs from a fresh clone
with `scripts/setup.sh` done: `.venv/bin/python -m pytest test_repro_<run_id>.py`. A chaos run is timed by real
brokers, so the test gives the plan a few tries on one cluster and passes as soon as one shows the anomaly; it
fails if none does, and errors (no pass) if no try could be judged.
"""
from __future__ import annotations

import json
import re
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafka_chaos.harness.replay import Trials, matches, options_from_command, signature
from kafka_chaos.harness.shrink_search import SearchResult, span_s
from kafka_chaos.nemesis import schedule_data


@dataclass
class ReproOutcome:
    target: str
    runs: list[tuple[Path, set[str], bool, bool]] = field(default_factory=list)   # dir, kinds, judged, matched

    @property
    def reproduced(self) -> bool:
        return any(m for _, _, _, m in self.runs)

    @property
    def judged(self) -> bool:
        return any(j for _, _, j, _ in self.runs)

    def explain(self) -> str:
        return f"{self.target} in {sum(m for *_, m in self.runs)} of {len(self.runs)} tries: " + "; ".join(
            f"{d} ({', '.join(sorted(k)) or 'no anomaly' if j else 'no verdict'})" for d, k, j, _ in self.runs)


def reproduce(command: str, schedule: dict, target: str, tries: int = 3, results: Path | str | None = None,
              engine: str = "pandas") -> ReproOutcome:
    """Play `schedule` with the settings of `command` up to `tries` times on one cluster, stopping at the first
    run that shows `target`."""
    results = Path(results or tempfile.mkdtemp(prefix="kafka-chaos-repro-"))
    results.mkdir(parents=True, exist_ok=True)
    plan = schedule_data.from_dict(schedule, "the test's SCHEDULE")
    sched_file = schedule_data.write(results / "schedule.json", plan.steps, plan.scenario, plan.seed, plan.duration_s)
    opts = replace(options_from_command(command), schedule_file=sched_file, results=results, engine=engine,
                   duration_s=plan.duration_s, live=False, reuse_cluster=False, keep_cluster=False)
    outcome = ReproOutcome(target)
    with Trials() as trials:
        for i in range(tries):
            r = trials.run(replace(opts, run_id=f"repro-{i + 1}-{int(time.time())}"))
            v = r.verdict
            judged = bool(v) and v.get("valid") is not None
            outcome.runs.append((r.run_dir, signature(v), judged, judged and matches(v, target)))
            if outcome.runs[-1][3]:
                break
    return outcome


def repro_test_name(run_id: str) -> str:
    return "test_repro_" + re.sub(r"\W", "_", run_id)


TEMPLATE = '''"""Reproduces `{target}` of kafka-chaos run {run_id}, from a fault plan shrunk by `kafka-chaos shrink`
({when}): {n_steps} step(s) instead of {n_orig}, {span:.1f} s of faults instead of {orig_span:.1f} s.

{steps}
Settings: {command}
Run it (real brokers in Docker; each try about {duration:.0f} s of workload plus start-up and check):
    .venv/bin/python -m pytest {filename}
It gives the plan up to {tries} tries on one cluster (chaos runs are timed by real brokers) and passes when one
shows `{target}`.
"""
import json

import pytest

from kafka_chaos.harness.repro import reproduce

COMMAND = {command!r}
TARGET = {target!r}
TRIES = {tries}
SCHEDULE = json.loads("""
{schedule}
""")


@pytest.mark.chaos
@pytest.mark.chaos_quick
def {name}(tmp_path):
    outcome = reproduce(COMMAND, SCHEDULE, TARGET, tries=TRIES, results=tmp_path)
    if not outcome.judged:
        pytest.fail("no try could be judged: " + outcome.explain())
    assert outcome.reproduced, outcome.explain()
'''


def step_lines(steps) -> list[str]:
    out = []
    for i, s in enumerate(sorted(steps, key=lambda s: (s.start_s, s.heal_s)), 1):
        args = schedule_data.step_to_dict(s)["args"]
        shown = ", ".join(f"{k}={v}" for k, v in args.items())
        out.append(f"{i}. at {s.start_s:g} s: {s.fault.name}{f' ({shown})' if shown else ''}, healed after "
                   f"{s.heal_s - s.start_s:g} s (seed {s.seed})")
    return out


def write_test(out_dir: Path, run_id: str, command: str, target: str, plan: dict, result: SearchResult,
               tries: int) -> Path:
    path = out_dir / f"{repro_test_name(run_id)}.py"
    steps = "\n".join(step_lines(result.smallest)) + "\n"
    path.write_text(TEMPLATE.format(
        target=target, run_id=run_id, when=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        n_steps=len(result.smallest), n_orig=len(result.original), span=span_s(result.smallest),
        orig_span=span_s(result.original), steps=steps, command=command, duration=plan.get("duration_s") or 0,
        filename=path.name, tries=tries, schedule=json.dumps(plan, indent=2), name=repro_test_name(run_id)))
    return path


def write_report(out_dir: Path, run_id: str, target: str, result: SearchResult, rows: list[dict],
                 budget_s: float, retries: int) -> Path:
    """shrink-report.md: the steps before and after, and every candidate tried."""
    lines = [f"# Shrink of {run_id}: `{target}`", "",
             f"{len(result.original)} step(s), {span_s(result.original):.1f} s of faults -> "
             f"{len(result.smallest)} step(s), {span_s(result.smallest):.1f} s. {result.tries} run(s) in "
             f"{result.elapsed_s / 60:.1f} min of a {budget_s / 60:.0f} min budget"
             f"{' (spent: the search stopped early)' if result.budget_spent else ''}; up to {retries} tries per "
             "candidate.", "", "## Smallest plan", ""] + step_lines(result.smallest) + \
            ["", "## Original plan", ""] + step_lines(result.original) + \
            ["", "## Runs", "", "| # | phase | steps | span s | run s | reproduced | kinds | results |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['n']} | {r['phase']} | {r['steps']} | {r['span_s']:.1f} | {r['duration_s']:.0f} | "
                     f"{'yes' if r['matched'] else 'no'} | {', '.join(r['kinds']) or '-'} | {r['dir']} |")
    path = out_dir / "shrink-report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
