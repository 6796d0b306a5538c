"""The KRaft controller's fencing decisions, read back from the nodes' logs (results/<run_id>/logs/<node>.log).

Why: when a broker becomes usable again after a restart or a pause is the controller's decision, and it depends on
work inside the broker that nothing else in the history records (starting the JVM, registering, catching up with
the metadata log, loading and recovering its logs). The active controller logs each decision at INFO, in one line
whose time is exact to the millisecond:

- `No previous registration found for broker N` / `Registering a new incarnation of broker N`
  (ClusterControlManager.registerBroker): a broker process (re)started and registered, fenced;
- `Fencing broker N ... because its session has timed out` (ReplicationControlManager.maybeFenceOneStaleBroker);
- `The request from broker N to unfence has been granted` (BrokerHeartbeatManager.calculateNextBrokerState): the
  broker asked to be unfenced (it had finished starting up) and had caught up with its registration record. The
  controller elects leaders for leaderless partitions in the same event (ReplicationControlManager
  .handleBrokerUnfenced), an unclean election included.

Only these lines are read (docs/history.md, "logs/<node>.log"); a run without them (ZooKeeper mode, older runs, a
lost log) gives no events, and the model then falls back on its timing bounds.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]")
_EVENTS = (
    ("registered", re.compile(r"(?:No previous registration found for|Registering a new incarnation of) broker (\d+)")),
    ("fenced", re.compile(r"Fencing broker (\d+) .*because its session has timed out")),
    ("unfenced", re.compile(r"The request from broker (\d+) to unfence has been granted")),
)


@dataclass(frozen=True)
class FencingEvent:
    t_ns: int          # the log line's time (the node's clock, UTC, to the millisecond)
    broker: int
    event: str         # registered | fenced | unfenced


def parse_line(line: str) -> FencingEvent | None:
    """The fencing event one log line records, or None."""
    if "QuorumController" not in line and "BrokerHeartbeatManager" not in line:
        return None
    m = _TIME.match(line)
    if not m:
        return None
    for event, pattern in _EVENTS:
        hit = pattern.search(line)
        if hit:
            t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
            return FencingEvent(int(t.timestamp()) * 1_000_000_000 + int(m.group(2)) * 1_000_000,
                                int(hit.group(1)), event)
    return None


def fencing_events(run_dir: Path | str) -> list[FencingEvent]:
    """Every fencing event in the run's node logs, in time order, each once (the same line read from two logs, e.g.
    a combined-mode node, counts once). [] when the run has no node logs."""
    logs = Path(run_dir) / "logs"
    seen: set[FencingEvent] = set()
    if logs.is_dir():
        for path in sorted(logs.glob("*.log")):
            if path.name in ("clients.log", "java-clients.log"):
                continue
            with path.open(encoding="utf-8", errors="replace") as f:
                for line in f:
                    ev = parse_line(line)
                    if ev is not None:
                        seen.add(ev)
    return sorted(seen, key=lambda e: (e.t_ns, e.broker, e.event))


_NODE = re.compile(r"-b(\d+)\.log$")
_FATAL = re.compile(r"ERROR Encountered fatal fault: (.*)")
_HANDLER = re.compile(r"\s*\(org\.apache\.kafka\.server\.fault\.\w+\)$")


def fatal_faults(run_dir: Path | str) -> list[tuple[int, int, str]]:
    """(t_ns, broker, message) for each `Encountered fatal fault` a broker logged (its fault handler halts the
    process: ProcessTerminatingFaultHandler), with the first line of the cause that follows it. [] without logs."""
    out = []
    logs = Path(run_dir) / "logs"
    for path in sorted(logs.glob("*-b*.log")) if logs.is_dir() else ():
        node = _NODE.search(path.name)
        if node is None:
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for i, line in enumerate(lines):
            hit = _FATAL.search(line)
            m = _TIME.match(line)
            if hit and m:
                t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
                cause = lines[i + 1].strip() if i + 1 < len(lines) and not _TIME.match(lines[i + 1]) else ""
                out.append((int(t.timestamp()) * 1_000_000_000 + int(m.group(2)) * 1_000_000, int(node.group(1)),
                            _HANDLER.sub("", hit.group(1)) + (f": {cause}" if cause else "")))
    return sorted(out)


def fenced_times(run_dir: Path | str, events: list[FencingEvent] | None = None) -> dict[int, list[int]]:
    """broker -> the times the controller fenced it for a lapsed session while it was unfenced, in order ({} when
    the logs show none). The controller also logs a fencing for a broker that registered and was still fenced, whose
    session lapsed while it was starting up ("Fencing broker N", then "Ignoring no-op registration change"): that
    changes nothing and is left out (seen in three real runs on 2026-11-27, 7 s after a slow restart's registration).
    """
    out: dict[int, list[int]] = {}
    active: dict[int, bool] = {}
    for ev in fencing_events(run_dir) if events is None else events:
        if ev.event == "fenced" and active.get(ev.broker, True):
            out.setdefault(ev.broker, []).append(ev.t_ns)
        active[ev.broker] = ev.event == "unfenced"
    return out


def unfence_times(run_dir: Path | str, events: list[FencingEvent] | None = None) -> dict[int, list[int]]:
    """broker -> the times the controller granted it unfencing, in order ({} when the logs show none). events:
    fencing_events(run_dir), if already read."""
    out: dict[int, list[int]] = {}
    for ev in fencing_events(run_dir) if events is None else events:
        if ev.event == "unfenced":
            out.setdefault(ev.broker, []).append(ev.t_ns)
    return out


_FEATURE = re.compile(r"Replayed a FeatureLevelRecord setting feature transaction\.version to (\d+)")


def transaction_version(run_dir: Path | str) -> int | None:
    """The transaction.version feature level the controller finalized (its last `Replayed a FeatureLevelRecord
    setting feature transaction.version to N` line in the node logs; FeatureControlManager, 4.0+). None: no such
    line (a release without the feature, ZooKeeper mode, or no logs)."""
    level = None
    logs = Path(run_dir) / "logs"
    for path in sorted(logs.glob("*.log")) if logs.is_dir() else ():
        if path.name in ("clients.log", "java-clients.log"):
            continue
        with path.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                hit = _FEATURE.search(line) if "FeatureLevelRecord" in line else None
                if hit:
                    level = int(hit.group(1))
    return level


_TXN_ID = re.compile(r"Initialized transactionalId (\S+) with producerId (\d+) and producer epoch")


def transactional_ids(run_dir: Path | str) -> dict[int, str]:
    """producer id -> the transactional.id it was given, from the transaction coordinators' `Initialized
    transactionalId X with producerId N and producer epoch E` lines (TransactionCoordinator.handleInitProducerId,
    INFO) in the brokers' logs; {} without them."""
    out: dict[int, str] = {}
    logs = Path(run_dir) / "logs"
    for path in sorted(logs.glob("*-b*.log")) if logs.is_dir() else ():
        with path.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                hit = _TXN_ID.search(line) if "Initialized transactionalId" in line else None
                if hit:
                    out[int(hit.group(2))] = hit.group(1)
    return out
