"""The search behind `kafka-chaos shrink`: a pure function of a fault plan and an `evaluate(steps) -> bool` callable.

It knows nothing of clusters: `evaluate` says whether a candidate plan still reproduces the anomaly (a real run,
or a synthetic rule in a unit test), so the search can be tested without Docker. Three passes, each keeping only
candidates that reproduce:
1. drop steps, delta-debugging style (Zeller's ddmin: try halves, then complements, then finer splits), which ends
   1-minimal: removing any single remaining step loses the anomaly (when `evaluate` is deterministic);
2. shorten each step's window (halving its hold down to `min_hold_s`);
3. move steps closer: the first one to `min_lead_s`, then each gap between consecutive starts halved.
A chaos run is not deterministic (timing), so a candidate counts as reproducing when any of `retries` tries does.
The original plan is taken as reproducing (it did: that is why we shrink). The search stops when the budget is
spent (checked before each try, on an injectable clock) and returns the smallest plan found so far.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from kafka_chaos.nemesis.schedule import Step

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SearchConfig:
    budget_s: float = 1800.0
    retries: int = 2                 # tries per candidate; it reproduces if any try does
    min_hold_s: float = 1.0          # no window is shortened below this
    min_lead_s: float = 2.0          # no step is moved before this (the workload needs a moment to start)
    min_gap_s: float = 0.5           # gaps between consecutive starts are not shrunk below this


@dataclass(frozen=True)
class Attempt:
    phase: str                       # "drop", "shorten" or "closer"
    steps: tuple[Step, ...]
    reproduced: bool
    tries: int
    elapsed_s: float                 # since the search began, when this candidate was decided


@dataclass
class SearchResult:
    original: tuple[Step, ...]
    smallest: tuple[Step, ...]
    attempts: list[Attempt] = field(default_factory=list)
    tries: int = 0                   # evaluate() calls
    budget_spent: bool = False       # stopped by the budget rather than by running out of candidates
    elapsed_s: float = 0.0

    @property
    def reduced(self) -> bool:
        return plan_key(self.smallest) != plan_key(self.original)


class BudgetSpent(Exception):
    """Raised inside the search when the budget ends; the best plan so far stands."""


def plan_key(steps: Sequence[Step]) -> tuple:
    return tuple(sorted((round(s.start_s, 3), round(s.heal_s, 3), s.fault, s.seed) for s in steps))


def span_s(steps: Sequence[Step]) -> float:
    """Seconds from 0 to the last heal: what a run of this plan must last at least."""
    return max((s.heal_s for s in steps), default=0.0)


class _Search:
    def __init__(self, evaluate: Callable[[list[Step]], bool], config: SearchConfig, clock):
        self.evaluate, self.config, self.clock = evaluate, config, clock
        self.t0 = clock()
        self.result: SearchResult | None = None
        self.cache: dict[tuple, bool] = {}

    def elapsed(self) -> float:
        return self.clock() - self.t0

    def test(self, steps: Sequence[Step], phase: str) -> bool:
        key = plan_key(steps)
        if key in self.cache:
            return self.cache[key]
        reproduced, tries = False, 0
        for _ in range(max(1, self.config.retries)):
            if self.elapsed() >= self.config.budget_s:
                raise BudgetSpent()
            tries += 1
            self.result.tries += 1
            if self.evaluate(sorted(steps, key=lambda s: (s.start_s, s.heal_s))):
                reproduced = True
                break
        self.cache[key] = reproduced
        self.result.attempts.append(Attempt(phase, tuple(steps), reproduced, tries, round(self.elapsed(), 3)))
        log.info("shrink %s: %d step(s), span %.1f s: %s after %d tr%s", phase, len(steps), span_s(steps),
                 "reproduced" if reproduced else "not reproduced", tries, "y" if tries == 1 else "ies")
        if reproduced and _smaller(steps, self.result.smallest):
            self.result.smallest = tuple(sorted(steps, key=lambda s: (s.start_s, s.heal_s)))
        return reproduced

    # ---- pass 1: drop steps (ddmin) ---------------------------------------------------------------------------
    def drop(self, steps: list[Step]) -> list[Step]:
        n = 2
        while len(steps) >= 2:
            chunks = _split(steps, n)
            for c in chunks:
                if self.test(c, "drop"):
                    steps, n = c, 2
                    break
            else:
                for c in chunks if n > 2 else []:
                    rest = [s for s in steps if s not in c]
                    if self.test(rest, "drop"):
                        steps, n = rest, max(n - 1, 2)
                        break
                else:
                    if n >= len(steps):
                        break
                    n = min(len(steps), 2 * n)
        return steps

    # ---- pass 2: shorten windows ------------------------------------------------------------------------------
    def shorten(self, steps: list[Step]) -> list[Step]:
        for i in range(len(steps)):
            while True:
                s = steps[i]
                hold = s.heal_s - s.start_s
                shorter = round(max(self.config.min_hold_s, hold / 2), 3)
                if shorter >= hold - 1e-3:
                    break
                candidate = steps[:i] + [replace(s, heal_s=round(s.start_s + shorter, 3))] + steps[i + 1:]
                if not self.test(candidate, "shorten"):
                    break
                steps = candidate
        return steps

    # ---- pass 3: move steps closer ----------------------------------------------------------------------------
    def closer(self, steps: list[Step]) -> list[Step]:
        steps = sorted(steps, key=lambda s: (s.start_s, s.heal_s))
        lead = self.config.min_lead_s
        while steps and steps[0].start_s > lead + 1e-3:
            room = steps[0].start_s - lead
            shift = round(max(room / 2, min(room, 1.0)), 3)       # halve the lead; the last second at once
            candidate = _shifted(steps, 0, shift)
            if not self.test(candidate, "closer"):
                break
            steps = candidate
        for i in range(1, len(steps)):
            while True:
                gap = steps[i].start_s - steps[i - 1].start_s
                if gap <= self.config.min_gap_s + 1e-3:
                    break
                shift = round(max((gap - self.config.min_gap_s) / 2, min(gap - self.config.min_gap_s, 1.0)), 3)
                candidate = _shifted(steps, i, shift)
                if not self.test(candidate, "closer"):
                    break
                steps = candidate
        return steps


def _shifted(steps: list[Step], first: int, shift: float) -> list[Step]:
    """Steps `first`.. moved `shift` seconds earlier, keeping their holds."""
    return steps[:first] + [replace(s, start_s=round(s.start_s - shift, 3), heal_s=round(s.heal_s - shift, 3))
                            for s in steps[first:]]


def _split(items: list, n: int) -> list[list]:
    size, rem = divmod(len(items), n)
    out, i = [], 0
    for k in range(n):
        j = i + size + (1 if k < rem else 0)
        if j > i:
            out.append(items[i:j])
        i = j
    return out


def _smaller(a: Sequence[Step], b: Sequence[Step]) -> bool:
    """Fewer steps first, then less fault time in all, then an earlier end."""
    def size(steps):
        return len(steps), round(sum(s.heal_s - s.start_s for s in steps), 3), round(span_s(steps), 3)
    return size(a) < size(b)


def shrink(steps: Sequence[Step], evaluate: Callable[[list[Step]], bool], config: SearchConfig | None = None,
           clock: Callable[[], float] = time.monotonic) -> SearchResult:
    """The smallest plan found within the budget that `evaluate` still says reproduces."""
    config = config or SearchConfig()
    original = tuple(sorted(steps, key=lambda s: (s.start_s, s.heal_s)))
    search = _Search(evaluate, config, clock)
    search.result = SearchResult(original, original)
    search.cache[plan_key(original)] = True
    try:
        current = search.drop(list(original))
        current = search.shorten(current)
        current = search.closer(current)
        search.shorten(current)                    # moved closer, a window may now shorten further
    except BudgetSpent:
        search.result.budget_spent = True
        log.info("shrink: budget of %.0f s spent", config.budget_s)
    search.result.elapsed_s = round(search.elapsed(), 3)
    return search.result
