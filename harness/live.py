"""What a run shows while it runs, drawn with rich: phase, progress with elapsed and remaining time, current faults,
each partition's leader and ISR, and the ok / fail / indeterminate rates; the long set-up steps (jars, image
build) as spinners with their elapsed time.

On a terminal the display redraws in place and log records print above it. Otherwise (CI, pipes) nothing is drawn:
a plain log line every few seconds, and one line at the start and end of each set-up step.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import time
from dataclasses import dataclass
from typing import Iterator

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from kafka_chaos.base import progress as steps

log = logging.getLogger("kafka-chaos")
PLAIN_INTERVAL_S, LIVE_INTERVAL_S, MIN_RATE_WINDOW_S = 5.0, 1.0, 0.5


@dataclass(frozen=True)
class Snapshot:
    """One look at the run: the workload's counters, the nemesis's active faults, the partitions' leader/ISR."""
    elapsed_s: float
    duration_s: float
    ok: int
    fail: int
    info: int
    reads: int
    sends_per_s: float
    rates: tuple[float, float, float]            # ok, fail, indeterminate per second since the previous look
    faults: tuple[str, ...]
    partitions: tuple[tuple[int, int | None, tuple[int, ...]], ...] | None    # None: never answered yet
    partitions_age_s: float = 0.0                # > 0: metadata did not answer; these are that old

    @property
    def left_s(self) -> float:
        return max(0.0, self.duration_s - self.elapsed_s)


class Observer:
    """Takes snapshots; keeps the previous counters to turn them into rates."""

    def __init__(self, cluster, topic: str, workload, nemesis, duration_s: float):
        self.cluster, self.topic, self.workload, self.nemesis = cluster, topic, workload, nemesis
        self.duration_s = duration_s
        self.start = time.monotonic()
        self._last = (self.start, 0, 0, 0)
        self._rates = (0.0, 0.0, 0.0)
        self._parts: tuple | None = None
        self._parts_at = self.start

    def snapshot(self) -> Snapshot:
        s = self.workload.stats()
        now = time.monotonic()
        t0, ok0, fail0, info0 = self._last
        if now - t0 >= MIN_RATE_WINDOW_S:     # a shorter window gives a spike, not a rate: keep the last one
            dt = now - t0
            self._rates = ((s.ok - ok0) / dt, (s.fail - fail0) / dt, (s.info - info0) / dt)
            self._last = (now, s.ok, s.fail, s.info)
        try:
            self._parts = tuple((p.partition, p.leader, tuple(p.isr))
                                for p in self.cluster.describe(self.topic, timeout=2))
            self._parts_at = time.monotonic()
        except Exception as e:          # the broker asked is cut off or down: show the last answer, and its age
            log.debug("live display: describe: %s", e)
        age = 0.0 if self._parts_at >= now else time.monotonic() - self._parts_at
        return Snapshot(now - self.start, self.duration_s, s.ok, s.fail, s.info, s.reads, s.sends_per_s,
                        self._rates, tuple(f.name for f in list(self.nemesis.active)), self._parts, age)


def plain_line(phase: str, snap: Snapshot) -> str:
    """The log line of a snapshot, for CI logs and pipes."""
    isr = ("unavailable" if snap.partitions is None else
           " ".join(f"p{p}:{'-' if leader is None else leader}/{','.join(map(str, isr))}"
                    for p, leader, isr in snap.partitions)
           + (f" (as of {snap.partitions_age_s:.0f}s ago)" if snap.partitions_age_s else ""))
    ok_r, fail_r, info_r = snap.rates
    return (f"[{phase}] {snap.elapsed_s:.0f}s of {snap.duration_s:.0f}s, {snap.left_s:.0f}s left  "
            f"{snap.sends_per_s:.0f} sends/s  ok {snap.ok} fail {snap.fail} info {snap.info} "
            f"({ok_r:.0f}/{fail_r:.0f}/{info_r:.0f} per s)  reads {snap.reads}  "
            f"faults: {','.join(snap.faults) or 'none'}  leader/ISR {isr}")


class LeftColumn(ProgressColumn):
    """Time left of a task whose units are seconds (the run's duration), exact rather than estimated."""

    def render(self, task) -> Text:
        left = int(max(0.0, (task.total or 0) - (task.elapsed or 0.0)) + 0.999)   # the same clock as elapsed
        return Text(f"{left // 3600}:{left // 60 % 60:02d}:{left % 60:02d} left", style="progress.remaining")


def _stats_table(snap: Snapshot) -> Table:
    t = Table(box=None, padding=(0, 2), show_header=True, header_style="bold")
    for col in ("sends/s", "ok", "fail", "indeterminate", "reads"):
        t.add_column(col, justify="right")
    ok_r, fail_r, info_r = snap.rates
    t.add_row(f"{snap.sends_per_s:,.0f}", f"{snap.ok:,} ({ok_r:,.0f}/s)",
              Text(f"{snap.fail:,} ({fail_r:,.0f}/s)", style="red" if snap.fail else ""),
              Text(f"{snap.info:,} ({info_r:,.0f}/s)", style="yellow" if snap.info else ""), f"{snap.reads:,}")
    return t


def _partition_table(snap: Snapshot) -> Table | Text | Group:
    if snap.partitions is None:
        return Text("leader/ISR: unavailable (no metadata answer yet)", style="yellow")
    t = Table(box=None, padding=(0, 2), header_style="bold")
    for col in ("partition", "leader", "ISR"):
        t.add_column(col)
    for p, leader, isr in snap.partitions:
        t.add_row(str(p), Text("none", style="red") if leader is None else str(leader),
                  Text(",".join(map(str, isr)), style="yellow" if len(isr) < 2 else ""))
    if snap.partitions_age_s:
        return Group(Text(f"leader/ISR as of {snap.partitions_age_s:.0f} s ago: no metadata answer since",
                          style="yellow"), t)
    return t


def render(snap: Snapshot, bar: Progress) -> Group:
    faults = Text("faults: ") + (Text(", ".join(snap.faults), style="bold red") if snap.faults
                                 else Text("none", style="green"))
    return Group(bar, _stats_table(snap), faults, _partition_table(snap))


class LiveDisplay:
    def __init__(self, enabled: bool, out=None, banner: str | None = None):
        self.enabled, self.banner = enabled, banner          # banner: a line above the run (a soak's verdict)
        self.console = Console(file=out or sys.stdout) if enabled else None
        self._phase = "start"
        self._marks: list[tuple[str, float]] = [("start", time.monotonic())]

    def phase(self, name: str) -> None:
        self._phase = name
        self._marks.append((name, time.monotonic()))
        log.info("phase: %s", name)

    def durations(self) -> dict[str, float]:
        """Seconds spent in each phase so far (where a run's end-to-end time goes; bench/scenario_time.py)."""
        out: dict[str, float] = {}
        ends = self._marks[1:] + [("", time.monotonic())]
        for (name, t0), (_, t1) in zip(self._marks, ends):
            if name != "done":
                out[name] = out.get(name, 0.0) + t1 - t0
        return out

    def setup_steps(self):
        """Set-up steps (jars, image build) drawn while the cluster comes up."""
        return setup_progress(self.console) if self.enabled else contextlib.nullcontext()

    def watch(self, cluster, topic: str, workload, nemesis, duration_s: float) -> None:
        """Block for the run's duration, showing its state."""
        observer = Observer(cluster, topic, workload, nemesis, duration_s)
        if not self.enabled:
            while (left := duration_s - (time.monotonic() - observer.start)) > 0:
                time.sleep(min(PLAIN_INTERVAL_S, left))
                log.info("%s%s", plain_line(self._phase, observer.snapshot()),
                         f"  [{self.banner}]" if self.banner else "")
            return
        bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), TimeElapsedColumn(), LeftColumn(),
                       console=self.console)
        task = bar.add_task(self._phase, total=duration_s)
        with Live(console=self.console, refresh_per_second=4, transient=False) as live, _logs_through(live):
            while (elapsed := time.monotonic() - observer.start) < duration_s:
                snap = observer.snapshot()
                bar.update(task, completed=min(time.monotonic() - observer.start, duration_s))
                # drawn now, not left to rich's refresh thread: under load that thread may not run before the
                # next snapshot replaces this one (seen in a loaded test run: one frame in 2.5 s)
                live.update(self._with_banner(render(snap, bar)), refresh=True)
                time.sleep(max(0.0, min(LIVE_INTERVAL_S, duration_s - elapsed)))
            bar.update(task, completed=duration_s)
            live.update(self._with_banner(render(observer.snapshot(), bar)), refresh=True)

    def _with_banner(self, body: Group) -> Group:
        return Group(Text(self.banner, style="bold cyan"), body) if self.banner else body

    def done(self) -> None:
        """Marks the end (nothing is left drawn between runs)."""
        self.phase("done")


@contextlib.contextmanager
def _logs_through(live: Live) -> Iterator[None]:
    """Log records print above the live display instead of through it: handlers writing to the terminal write
    to rich's redirected stdout/stderr while it is drawn."""
    moved = []
    for h in logging.getLogger().handlers:
        if isinstance(h, logging.StreamHandler) and h.stream in (sys.__stderr__, sys.__stdout__):
            moved.append((h, h.setStream(sys.stderr if h.stream is sys.__stderr__ else sys.stdout)))
    try:
        yield
    finally:
        for h, stream in moved:
            h.setStream(stream)


@contextlib.contextmanager
def setup_progress(console: Console | None = None) -> Iterator[None]:
    """While in this block, long set-up steps draw a spinner with their elapsed time (on a terminal only: the
    default Console goes to stderr, so `setup --plan` keeps stdout for its tags)."""
    console = console or Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    previous = steps.install(lambda title: _rich_step(console, title))
    try:
        yield
    finally:
        steps.install(previous)


class _RichStep(steps.Step):
    def __init__(self, title: str, bar: Progress, task):
        super().__init__(title)
        self.bar, self.task = bar, task

    def update(self, detail: str) -> None:
        super().update(detail)
        self.bar.update(self.task, description=f"{self.title}: [dim]{detail}")


@contextlib.contextmanager
def _rich_step(console: Console, title: str) -> Iterator[steps.Step]:
    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                   transient=True)
    t0 = time.monotonic()
    with bar, _logs_through(bar.live):
        step = _RichStep(title, bar, bar.add_task(title, total=None))
        yield step
    console.print(f"[green]✓[/] {title} [dim]({time.monotonic() - t0:.1f} s)")
