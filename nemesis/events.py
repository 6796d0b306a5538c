"""Fault events: one per start and per heal, the rows of history/faults.parquet (see docs/history.md).

`details["effect"]` is the vocabulary the ISR model reads: kill, stop, pause, net, loss, latency, power_loss, damage,
slow, reassign, link, elect;
consumer_kill (a workload process, not a node) is for the consumer-group checks.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable

EFFECTS = ("kill", "stop", "pause", "net", "loss", "latency", "power_loss", "damage")
EFFECTS += ("slow", "reassign")      # CPU-starved nodes, a moved replica set
EFFECTS += ("link",)                 # a toxic on links through the link proxy (nemesis/links.py)
EFFECTS += ("elect",)                # a preferred-leader election asked of the controller (nemesis/process.py)
EFFECTS += ("consumer_kill",)        # a consumer-group member's process killed (no node: the model ignores it)
EFFECTS += ("consumer_pause",)       # a group member's process frozen (SIGSTOP; no node: the model ignores it)
CLIENT = "client"        # the workload host in a drop pair


@dataclass(frozen=True)
class FaultEvent:
    t_ns: int
    action: str                  # "start" or "heal"
    fault: str                   # e.g. "leader-isolate"
    nodes: list[int]
    details: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.action not in ("start", "heal"):
            raise ValueError(f"action must be start or heal, not {self.action!r}")
        if self.details.get("effect") not in EFFECTS:
            raise ValueError(f"details.effect must be one of {EFFECTS}, not {self.details.get('effect')!r}")

    @classmethod
    def now(cls, action: str, fault: str, nodes: list[int], details: dict) -> "FaultEvent":
        return cls(time.time_ns(), action, fault, sorted(int(n) for n in nodes), dict(details))

    def healed(self) -> "FaultEvent":
        """The heal row of this start row: same fault, nodes and details, a new time (when the undo finished:
        the fault may have lasted until then)."""
        details = {k: v for k, v in self.details.items() if k != "applied_ns"}
        return FaultEvent.now("heal", self.fault, self.nodes, details)

    def row(self) -> dict:
        """The faults.parquet row (details as a JSON string)."""
        return {"t_ns": self.t_ns, "action": self.action, "fault": self.fault, "nodes": list(self.nodes),
                "details": json.dumps(self.details, sort_keys=True)}


Record = Callable[[FaultEvent], None]


def discard(event: FaultEvent) -> None:
    """A Record that keeps nothing (manual CLI use)."""


class EventLog(list):
    """A Record that keeps every event in memory, in order (tests, the CLI's printout)."""

    def __call__(self, event: FaultEvent) -> None:
        self.append(event)
