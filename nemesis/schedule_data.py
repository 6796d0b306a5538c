"""Fault schedules as data: a plan written to and read from JSON, and `Planned`, a Schedule of fixed steps.

A run's resolved plan (every step with its start, fault, arguments, hold and own seed) is what makes a run
repeatable and what shrink edits: it can be written next to the history (`schedule.json`), edited by hand or by
`kafka-chaos shrink`, and given back to `kafka-chaos run --schedule FILE`. The format (docs/history.md):

    {"format": "kafka-chaos-schedule/1", "scenario": "cascade-kill", "seed": 7, "duration_s": 40,
     "steps": [{"at_s": 6, "fault": "cascade-kill", "args": {"interval_s": 6.0}, "heal_after_s": 24,
                "seed": 123}]}

`args` holds only the fault's arguments that differ from their defaults (nemesis.registry.FaultArgs); a step
without `seed` gets one derived from the file's seed and its index, so a hand-written file is still deterministic.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from pathlib import Path

from kafka_chaos.base.errors import UsageError
from kafka_chaos.nemesis.registry import FaultArgs
from kafka_chaos.nemesis.schedule import FaultSpec, Schedule, Step, _sub_seed

FORMAT = "kafka-chaos-schedule/1"
SCHEDULE_FILE = "schedule.json"          # the name of a run's resolved plan in its results directory
STEP_KEYS = {"at_s", "fault", "args", "heal_after_s", "seed"}
_ARG_FIELDS = {f.name: f for f in fields(FaultArgs) if f.name != "seed"}
_TUPLE_ARGS = {"targets", "peers"}


@dataclass(frozen=True)
class Planned(Schedule):
    """A schedule of fixed steps (from a file, or a shrunk plan): the seed given to `plan` is not used, since
    each step carries its own. Steps at or after the run's end are dropped and heals capped, as for any plan."""
    steps: tuple[Step, ...]

    def plan(self, seed: int, duration_s: float) -> list[Step]:
        out = [replace(s, heal_s=min(s.heal_s, duration_s)) for s in self.steps if s.start_s < duration_s]
        return sorted(out, key=lambda s: (s.start_s, s.heal_s, s.fault.name))


@dataclass(frozen=True)
class ScheduleFile:
    """What a schedule file holds: the steps and, for a replay, what they were planned for."""
    steps: tuple[Step, ...]
    scenario: str | None = None
    seed: int | None = None
    duration_s: float | None = None

    @property
    def schedule(self) -> Planned:
        return Planned(self.steps)

    @property
    def end_s(self) -> float:
        """When the last fault heals (0 for an empty plan)."""
        return max((s.heal_s for s in self.steps), default=0.0)


def step_to_dict(step: Step) -> dict:
    defaults = FaultArgs()
    args = {}
    for name in _ARG_FIELDS:
        value = getattr(step.fault.args, name)
        if value != getattr(defaults, name):
            args[name] = list(value) if isinstance(value, tuple) else value
    return {"at_s": round(step.start_s, 3), "fault": step.fault.name, "args": args,
            "heal_after_s": round(step.heal_s - step.start_s, 3), "seed": int(step.seed)}


def to_dict(steps, scenario: str | None = None, seed: int | None = None, duration_s: float | None = None) -> dict:
    out: dict = {"format": FORMAT}
    if scenario is not None:
        out["scenario"] = scenario
    if seed is not None:
        out["seed"] = int(seed)
    if duration_s is not None:
        out["duration_s"] = float(duration_s)
    out["steps"] = [step_to_dict(s) for s in sorted(steps, key=lambda s: (s.start_s, s.heal_s, s.fault.name))]
    return out


def write(path: Path | str, steps, scenario: str | None = None, seed: int | None = None,
          duration_s: float | None = None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_dict(steps, scenario, seed, duration_s), indent=2) + "\n")
    return path


def _bad(where: str, what: str) -> UsageError:
    return UsageError(f"{where}: {what}", "fix the file (the format is in docs/history.md, 'schedule.json'), "
                                          "e.g. {\"steps\": [{\"at_s\": 5, \"fault\": \"leader-kill\", "
                                          "\"heal_after_s\": 10}]}")


def _number(where: str, key: str, value, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(where, f"'{key}' must be a number, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise _bad(where, f"'{key}' must be {'> 0' if positive else '>= 0'}, got {value}")
    return float(value)


def _args(where: str, raw) -> FaultArgs:
    if raw is None:
        return FaultArgs()
    if not isinstance(raw, dict):
        raise _bad(where, f"'args' must be an object, got {raw!r}")
    unknown = set(raw) - set(_ARG_FIELDS)
    if unknown:
        raise _bad(where, f"unknown fault argument(s) {sorted(unknown)}; known: {', '.join(_ARG_FIELDS)}")
    values = {}
    for k, v in raw.items():
        if k in _TUPLE_ARGS and v is not None:
            if not isinstance(v, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in v):
                raise _bad(where, f"'{k}' must be a list of node ids, got {v!r}")
            v = tuple(v)
        values[k] = v
    return FaultArgs(**values)


def _step(where: str, s, seed: int | None, i: int) -> Step:
    if not isinstance(s, dict):
        raise _bad(where, f"must be an object, got {s!r}")
    unknown = set(s) - STEP_KEYS
    missing = {"at_s", "fault", "heal_after_s"} - set(s)
    if unknown or missing:
        raise _bad(where, f"unknown key(s) {sorted(unknown)}" if unknown else f"missing key(s) {sorted(missing)}")
    if not isinstance(s["fault"], str):
        raise _bad(where, f"'fault' must be a fault name, got {s['fault']!r}")
    at = _number(where, "at_s", s["at_s"], positive=False)
    hold = _number(where, "heal_after_s", s["heal_after_s"], positive=True)
    step_seed = s.get("seed")
    if step_seed is None:
        step_seed = _sub_seed(seed or 0, "step", i)
    elif isinstance(step_seed, bool) or not isinstance(step_seed, int):
        raise _bad(where, f"'seed' must be an integer, got {step_seed!r}")
    try:
        spec = FaultSpec(s["fault"], _args(where, s.get("args")))
    except UsageError as e:
        if e.cause.startswith(where):
            raise
        raise UsageError(f"{where}: {e.cause}", e.remedy) from None        # an unknown fault name
    return Step(at, spec, round(at + hold, 3), int(step_seed))


def from_dict(raw, source: str = "schedule") -> ScheduleFile:
    """Strict reading: every mistake is a UsageError naming the step and the key (exit 2)."""
    if not isinstance(raw, dict):
        raise _bad(source, "must hold a JSON object with a 'steps' list")
    if raw.get("format", FORMAT) != FORMAT:
        raise _bad(source, f"format {raw.get('format')!r} is not {FORMAT!r}")
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list):
        raise _bad(source, "'steps' must be a list")
    seed = raw.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise _bad(source, f"'seed' must be an integer, got {seed!r}")
    duration = raw.get("duration_s")
    duration = None if duration is None else _number(source, "duration_s", duration, positive=True)
    steps = [_step(f"{source}: step {i + 1}", s, seed, i) for i, s in enumerate(steps_raw)]
    steps.sort(key=lambda st: (st.start_s, st.heal_s, st.fault.name))
    return ScheduleFile(tuple(steps), raw.get("scenario"), seed, duration)


def read(path: Path | str) -> ScheduleFile:
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"schedule file {path} does not exist",
                         "pass a schedule.json (every run writes one into its results directory)")
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise _bad(str(path), f"not valid JSON ({e})") from None
    return from_dict(raw, str(path))
