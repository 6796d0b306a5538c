"""The fault interface and the targets a fault resolves when it starts.

A Fault's `start(cluster, record)` resolves its targets at that moment (the leader *now*, the active controller
*now*), applies itself and records one start event per step; `heal(cluster, record)` undoes exactly those steps,
records the matching heal events, and is idempotent. Bad input raises before anything is touched.
"""
from __future__ import annotations

import random
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable

from kafka_chaos.base.errors import HarnessError, UsageError
from kafka_chaos.base.waiting import retry_call
from kafka_chaos.nemesis.events import FaultEvent, Record


class FaultError(HarnessError):
    """A fault cannot be applied in the cluster's present state (no leader now, no controller running...)."""


# ---- targets ------------------------------------------------------------------------------------------------
class Target(ABC):
    """Which nodes a fault hits, decided when it starts."""

    @abstractmethod
    def resolve(self, cluster) -> list[int]: ...

    @abstractmethod
    def describe(self) -> dict: ...


@dataclass(frozen=True)
class Nodes(Target):
    ids: tuple[int, ...]

    def resolve(self, cluster) -> list[int]:
        for i in self.ids:
            cluster.node(i)        # UsageError naming the nodes that exist
        return list(self.ids)

    def describe(self) -> dict:
        return {"target": "nodes"}


class _NoAnswer(Exception):
    """A metadata request that failed for a reason other than bad input (timed out, no broker reachable)."""


def _partition_state(cluster, topic: str, partition: int, settle_s: float = 20.0):
    """The partition's state now. A broker that lags on metadata (just restarted, or the topic is brand new)
    answers "unknown topic" for a moment, and under heavy load a Metadata request can time out (seen in CI: one
    5 s timeout and a scheduled follower-kill never started): ask again for up to `settle_s` before giving up. An
    unknown topic (UsageError from the cluster) is bad input; anything else is the cluster not answering."""
    def ask():
        try:
            return cluster.describe(topic)
        except HarnessError:
            raise                       # e.g. the topic is unknown: asking again will not help
        except Exception as e:
            raise _NoAnswer(e) from e

    try:
        states = retry_call(ask, settle_s, errors=_NoAnswer)
    except _NoAnswer as e:
        raise FaultError(f"cannot describe topic {topic}: no broker answered metadata within {settle_s:g} s "
                         f"({e.args[0]})",
                         "the cluster is down or overloaded: check `kafka-chaos cluster status` and the load") from e
    for s in states:
        if s.partition == partition:
            return s
    raise UsageError(f"topic {topic} has no partition {partition}",
                     f"partitions are {', '.join(str(s.partition) for s in states)}")


def _led_partition(cluster, topic: str, partition: int):
    """The partition's state now; a fault aimed at its leader or followers needs it to have a leader."""
    s = _partition_state(cluster, topic, partition)
    if s.leader is None:
        raise FaultError(f"{topic}/{partition} has no leader now", "heal the cluster first")
    return s


@dataclass(frozen=True)
class Leader(Target):
    topic: str
    partition: int = 0

    def resolve(self, cluster) -> list[int]:
        return [_led_partition(cluster, self.topic, self.partition).leader]

    def describe(self) -> dict:
        return {"target": "leader", "topic": self.topic, "partition": self.partition}


@dataclass(frozen=True)
class Followers(Target):
    """The replicas of a partition other than its leader, in replica order."""
    topic: str
    partition: int = 0

    def resolve(self, cluster) -> list[int]:
        s = _led_partition(cluster, self.topic, self.partition)
        return [r for r in s.replicas if r != s.leader]

    def describe(self) -> dict:
        return {"target": "followers", "topic": self.topic, "partition": self.partition}


@dataclass(frozen=True)
class RandomFollower(Followers):
    """One follower of a partition, drawn with `seed` from its followers at that moment."""
    seed: int = 0

    def resolve(self, cluster) -> list[int]:
        return [random.Random(self.seed).choice(super().resolve(cluster))]

    def describe(self) -> dict:
        return super().describe() | {"target": "random-follower", "seed": self.seed}


@dataclass(frozen=True)
class Controller(Target):
    """The active controller (KRaft quorum leader; in ZooKeeper mode the broker holding /controller)."""

    def resolve(self, cluster) -> list[int]:
        c = cluster.active_controller()
        if c is None:
            raise FaultError("no active controller now", "start the controllers: kafka-chaos nemesis heal")
        return [c]

    def describe(self) -> dict:
        return {"target": "controller"}


@dataclass(frozen=True)
class ZooKeeperNodes(Target):
    """The ZooKeeper node(s) of a ZooKeeper-mode cluster."""

    def resolve(self, cluster) -> list[int]:
        ids = [n.id for n in cluster.zookeepers]
        if not ids:
            raise UsageError("this cluster has no ZooKeeper node (it runs KRaft)",
                             "start one with --metadata zookeeper (Kafka up to 3.9)")
        return ids

    def describe(self) -> dict:
        return {"target": "zookeeper"}


@dataclass(frozen=True)
class AllBrokers(Target):
    def resolve(self, cluster) -> list[int]:
        return [b.id for b in cluster.brokers]

    def describe(self) -> dict:
        return {"target": "all-brokers"}


@dataclass(frozen=True)
class RandomBrokers(Target):
    """`count` brokers drawn with `seed`; count None means a random minority (1 .. (n-1)//2, at least 1)."""
    seed: int
    count: int | None = 1

    def resolve(self, cluster) -> list[int]:
        ids = sorted(b.id for b in cluster.brokers)
        rng = random.Random(self.seed)
        k = self.count if self.count is not None else rng.randint(1, max(1, (len(ids) - 1) // 2))
        if not 1 <= k <= len(ids):
            raise UsageError(f"cannot pick {k} of {len(ids)} brokers", f"pick 1 to {len(ids)}")
        return sorted(rng.sample(ids, k))

    def describe(self) -> dict:
        return {"target": "random-minority" if self.count is None else "random-brokers", "seed": self.seed}


# ---- faults -------------------------------------------------------------------------------------------------
@dataclass
class Applied:
    """One step a fault took: its start event and how to undo it."""
    event: FaultEvent
    undo: Callable[[], None]


class Fault(ABC):
    """A verb with an exact inverse. Subclasses implement `_start` and call `_applied` once per step."""

    name: str = "fault"
    description: str = ""

    def __init__(self, name: str | None = None):
        if name:
            self.name = name
        self._steps: list[Applied] = []
        self._record: Record = lambda ev: None
        self.events: list[FaultEvent] = []        # every start and heal this fault recorded, in order

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {'active' if self.active else 'idle'}>"

    @property
    def active(self) -> bool:
        return bool(self._steps)

    @property
    def nodes(self) -> list[int]:
        """Every node id the applied steps touched."""
        return sorted({n for s in self._steps for n in s.event.nodes})

    def start(self, cluster, record: Record) -> None:
        if self._steps:
            raise FaultError(f"{self.name} is already active", "heal it before starting it again")
        self._record = record
        self._since = time.time_ns()
        self._start(cluster)

    @abstractmethod
    def _start(self, cluster) -> None: ...

    def _begin(self) -> None:
        """Mark that the next step starts applying now: a fault of several steps (a rolling restart, a cascade
        kill) calls it before each step, so a step's row never carries the time the previous one ended."""
        self._since = time.time_ns()

    def _applied(self, nodes: list[int], details: dict, undo: Callable[[], None]) -> FaultEvent:
        """Record a step that took effect. Its time is when applying it began (the effect may start any moment
        after that: rules go on node by node, a kill lands mid-call), so the model's windows never open late;
        `applied_ns` says when applying it ended."""
        done = time.time_ns()
        ev = FaultEvent(getattr(self, "_since", done), "start", self.name, sorted(int(n) for n in nodes),
                        dict(details) | {"applied_ns": done})
        self._since = done
        self._steps.append(Applied(ev, undo))
        self._emit(ev)
        return ev

    def _emit(self, ev: FaultEvent) -> None:
        self.events.append(ev)
        self._record(ev)

    def _heal_order(self, steps: list[Applied]) -> list[Applied]:
        """The order undo runs in: last applied first, unless a fault says otherwise."""
        return list(reversed(steps))

    def heal(self, cluster, record: Record | None = None) -> None:
        """Undo every applied step and record its heal event; a step whose undo fails stays for a retry."""
        if record is not None:
            self._record = record
        for step in self._heal_order(self._steps):
            step.undo()                      # raises: this and the later steps stay applied
            self._steps.remove(step)
            self._emit(step.event.healed())

    def reapply(self, cluster, node_ids: set[int]) -> None:
        """Called after `node_ids` restarted with a fresh network namespace; network faults put their rules back."""
