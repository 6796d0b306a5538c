"""Seeded fault schedules (pure planning) and the executor that plays a plan against a cluster.

Planning is Jepsen's generator half: `schedule.plan(seed, duration_s)` returns the same list of Steps for the same
seed, without any cluster, so it can be tested and printed. Each Step carries its own seed, which random targets
(a random broker, a random minority, the shuffle of a split) use at start time. The executor is the nemesis half:
it starts and heals each step on time, and heals everything in `finally`, on every exit path.
"""
from __future__ import annotations

import contextlib
import logging
import random
import signal
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace

from kafka_chaos.base.errors import UsageError
from kafka_chaos.nemesis import registry
from kafka_chaos.nemesis.base import Fault
from kafka_chaos.nemesis.control import Nemesis
from kafka_chaos.nemesis.registry import FaultArgs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FaultSpec:
    """A fault by registry name and arguments; unknown names fail here, before any run."""
    name: str
    args: FaultArgs = field(default_factory=FaultArgs)

    def __post_init__(self):
        object.__setattr__(self, "name", registry.fault_type(self.name).name)   # an old spelling -> today's name
        registry.check(self.name, self.args)

    def build(self, seed: int) -> Fault:
        return registry.build(self.name, self.args if self.args.targets else replace(self.args, seed=seed))


def spec(name: str, **args) -> FaultSpec:
    if "targets" in args and args["targets"] is not None:
        args["targets"] = tuple(args["targets"])
    return FaultSpec(name, FaultArgs(**args))


@dataclass(frozen=True)
class Step:
    start_s: float
    fault: FaultSpec
    heal_s: float
    seed: int


def _sub_seed(seed: int, *path) -> int:
    return random.Random("/".join(map(str, (seed, *path)))).getrandbits(32)


class Schedule(ABC):
    @abstractmethod
    def plan(self, seed: int, duration_s: float) -> list[Step]:
        """Steps that start before `duration_s`, sorted by start time; heals are capped at `duration_s`."""


def _positive(what: str, value: float) -> None:
    if value <= 0:
        raise UsageError(f"{what} must be > 0, got {value}", f"pass a positive {what}")


@dataclass(frozen=True)
class Once(Schedule):
    at_s: float
    fault: FaultSpec
    duration_s: float

    def __post_init__(self):
        _positive("duration", self.duration_s)
        if self.at_s < 0:
            raise UsageError(f"a fault cannot start at {self.at_s} s", "start at 0 or later")

    def plan(self, seed: int, duration_s: float) -> list[Step]:
        if self.at_s >= duration_s:
            return []
        return [Step(self.at_s, self.fault, min(self.at_s + self.duration_s, duration_s), _sub_seed(seed, "once"))]


@dataclass(frozen=True)
class Sequence(Schedule):
    """Children one after another: each starts `gap_s` after the previous one's last heal."""
    items: tuple[Schedule, ...]
    gap_s: float = 0.0

    def plan(self, seed: int, duration_s: float) -> list[Step]:
        steps, offset = [], 0.0
        for i, child in enumerate(self.items):
            if offset >= duration_s:
                break
            sub = child.plan(_sub_seed(seed, "seq", i), duration_s - offset)
            steps += [replace(s, start_s=s.start_s + offset, heal_s=s.heal_s + offset) for s in sub]
            offset = max([offset] + [s.heal_s for s in steps]) + self.gap_s
        return steps


@dataclass(frozen=True)
class Stagger(Schedule):
    """Jepsen's stagger: wait uniform(0, 2·mean_interval), start a randomly chosen fault, hold it for
    uniform(0.5, 1.5)·mean_duration, heal it, repeat. One fault at a time."""
    faults: tuple[FaultSpec, ...]
    mean_interval_s: float
    mean_duration_s: float | None = None

    def __post_init__(self):
        if not self.faults:
            raise UsageError("stagger needs at least one fault", "name the faults to stagger")
        _positive("mean interval", self.mean_interval_s)

    def plan(self, seed: int, duration_s: float) -> list[Step]:
        rng = random.Random(_sub_seed(seed, "stagger"))
        hold = self.mean_duration_s or self.mean_interval_s
        steps, t = [], 0.0
        while True:
            t += rng.uniform(0, 2 * self.mean_interval_s)
            if t >= duration_s:
                return steps
            fault = rng.choice(self.faults)
            heal = min(t + rng.uniform(0.5, 1.5) * hold, duration_s)
            steps.append(Step(round(t, 3), fault, round(heal, 3), rng.getrandbits(32)))
            t = heal


@dataclass(frozen=True)
class Mix(Schedule):
    """Children planned independently (each with its own sub-seed) and overlaid: faults may overlap."""
    items: tuple[Schedule, ...]

    def plan(self, seed: int, duration_s: float) -> list[Step]:
        steps = [s for i, child in enumerate(self.items) for s in child.plan(_sub_seed(seed, "mix", i), duration_s)]
        return sorted(steps, key=lambda s: (s.start_s, s.heal_s, s.fault.name))


def once(at_s: float, fault: FaultSpec | str, duration_s: float) -> Once:
    return Once(at_s, _spec(fault), duration_s)


def sequence(items, gap_s: float = 0.0) -> Sequence:
    return Sequence(tuple(items), gap_s)


def stagger(faults, mean_interval_s: float, mean_duration_s: float | None = None) -> Stagger:
    return Stagger(tuple(_spec(f) for f in faults), mean_interval_s, mean_duration_s)


def mix(*items) -> Mix:
    return Mix(tuple(items))


def _spec(f: FaultSpec | str) -> FaultSpec:
    return f if isinstance(f, FaultSpec) else FaultSpec(f)


# ---- execution ----------------------------------------------------------------------------------------------
@contextlib.contextmanager
def exit_on_signals():
    """Turn SIGTERM (and SIGHUP) into SystemExit in the main thread, so `finally` blocks heal on `kill PID`
    as they do on Ctrl-C (KeyboardInterrupt). Elsewhere than the main thread it changes nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_exit(signum, frame):
        raise SystemExit(128 + signum)

    previous = {s: signal.signal(s, raise_exit) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


class ScheduleRunner:
    """Plays steps against a Nemesis on time, from a background thread or in the caller's (`run`).

    A step whose start fails (no leader at that moment, ...) is logged in `failures` and skipped. Whatever
    happens, the run ends with `nemesis.heal_all()`; `stop()` also heals if the thread does not finish in time.
    """

    def __init__(self, nemesis: Nemesis, steps: list[Step], clock=time.monotonic):
        self.nemesis, self.steps, self.clock = nemesis, list(steps), clock
        self.failures: list[tuple[Step, str]] = []
        self.heal_problems: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _ops(self):
        ops = []
        for i, s in enumerate(self.steps):
            ops.append((s.start_s, 1, "start", i))
            ops.append((s.heal_s, 0, "heal", i))      # at equal times, heal before start
        return sorted(ops)

    def run(self) -> None:
        t0 = self.clock()
        faults: dict[int, Fault] = {}
        try:
            for at, _, kind, i in self._ops():
                if self._stop.wait(max(0.0, t0 + at - self.clock())):
                    break
                step = self.steps[i]
                if kind == "start":
                    try:
                        faults[i] = step.fault.build(step.seed)
                        self.nemesis.start(faults[i])
                    except Exception as e:
                        log.warning("nemesis: %s at %.1f s did not start: %s", step.fault.name, at, e)
                        self.failures.append((step, str(e)))
                elif i in faults:
                    try:
                        self.nemesis.heal(faults[i])
                    except Exception as e:
                        log.warning("nemesis: heal of %s failed (heal-all will retry): %s", step.fault.name, e)
        finally:
            self.heal_problems = self.nemesis.heal_all()

    def start(self) -> "ScheduleRunner":
        self._thread = threading.Thread(target=self.run, name="nemesis", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 300) -> None:
        """Stop playing, wait for the thread's heal-all; heal here too if the thread is stuck."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("nemesis thread still busy after %.0f s: healing from the caller", timeout)
                self.heal_problems = self.nemesis.heal_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the plan has played out (and healed); True when it has."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def __enter__(self) -> "ScheduleRunner":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def run_schedule(cluster, schedule: Schedule, seed: int, duration_s: float, record=None) -> ScheduleRunner:
    """Plan and play a schedule in this thread, healing on exception, Ctrl-C and SIGTERM. Returns the runner."""
    nemesis = Nemesis(cluster, record) if record else Nemesis(cluster)
    runner = ScheduleRunner(nemesis, schedule.plan(seed, duration_s))
    with exit_on_signals():
        runner.run()
    return runner
