"""Time-window and log-segment arithmetic of the model: a replica's log is a list of [epoch, t0, t1] segments
("holds every write the epoch-e leader appended between t0 and t1"); risk and unavailability are Windows."""
from __future__ import annotations

from dataclasses import dataclass

from kafka_chaos.checkers.model.config import TICK_NS


@dataclass(frozen=True)
class Cause:
    """The event an anomaly is blamed on (checkers.excuses): an id a reader can find in the history or the model's
    events, its time and what it is."""

    id: str
    t_ns: int
    what: str


@dataclass(frozen=True)
class Window:
    """A time window of one partition: at risk for writes with `acks`, or unwritable with `acks`. `cause`: the
    event that opened it (a loss window's election or power loss), where the model knows it."""

    partition: int
    start_ns: int
    end_ns: int
    acks: tuple[str, ...]
    reason: str
    cause: Cause | None = None



def _cut(log: list, keep_until: int) -> list:
    out = []
    for e, t0, t1 in log:
        if t0 <= keep_until:
            out.append([e, t0, min(t1, keep_until)])
    return out



def _union(segments) -> list:
    by_epoch: dict[int, list] = {}
    for e, t0, t1 in segments:
        by_epoch.setdefault(e, []).append([t0, t1])
    out = []
    for e, spans in by_epoch.items():
        spans.sort()
        cur = list(spans[0])
        for a, b in spans[1:]:
            if a <= cur[1] + TICK_NS:
                cur[1] = max(cur[1], b)
            else:
                out.append([e, cur[0], cur[1]])
                cur = [a, b]
        out.append([e, cur[0], cur[1]])
    return out



def _minus(log: list, truth: list) -> list:
    """Parts of `log` (epoch segments) that `truth` does not hold, ignoring gaps shorter than a tick."""
    out = []
    for e, t0, t1 in log:
        cur = t0
        for a, b in sorted((a, b) for te, a, b in truth if te == e and b >= t0 and a <= t1):
            if a > cur + TICK_NS:
                out.append([e, cur, a])
            cur = max(cur, b)
        if t1 > cur + TICK_NS:
            out.append([e, cur, t1])
    return out



def _cause_key(w: Window) -> tuple:
    return (w.cause is not None, w.cause.t_ns if w.cause else 0, w.cause.id if w.cause else "")


def _merge(windows: list[Window]) -> list[Window]:
    """Join windows of one partition, acks, reason and cause that touch or overlap. Windows of different causes stay
    apart: the same election in the recorded and late replays happens at two times, and an excuse's timing is
    checked against the cause's own (checkers.excuses)."""
    out: list[Window] = []
    for w in sorted(windows, key=lambda w: (w.partition, w.acks, w.reason, _cause_key(w), w.start_ns)):
        last = out[-1] if out else None
        if last and (last.partition, last.acks, last.reason, last.cause) == (w.partition, w.acks, w.reason, w.cause) \
                and w.start_ns <= last.end_ns + TICK_NS:
            out[-1] = Window(w.partition, last.start_ns, max(last.end_ns, w.end_ns), w.acks, w.reason, w.cause)
        else:
            out.append(w)
    return sorted(out, key=lambda w: (w.start_ns, w.partition))


def intersect_windows(a: list[tuple[int, int, int]], b: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Per partition, the times both lists of (partition, start, end) windows cover."""
    out = []
    for pa, a0, a1 in a:
        for pb, b0, b1 in b:
            if pa == pb and max(a0, b0) < min(a1, b1):
                out.append((pa, max(a0, b0), min(a1, b1)))
    return sorted(out)
