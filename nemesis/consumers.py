"""Client process faults: kill -9 a consumer-group member's process; heal starts a replacement. Or freeze one
(SIGSTOP, `consumer-pause`; for the processes that offer `pause`, the exactly-once processors): it stops
heartbeating and its session expires, the group moves its partitions on, and on SIGCONT it finds itself a zombie
whose open transaction the group's next generation must fence (KIP-447); heal thaws it.

A group member that dies without leaving (no LeaveGroup, no last commit) is what a crashed application looks like
to Kafka: the coordinator keeps its partitions assigned until its session times out (session.timeout.ms), then
rebalances them to the others; the replacement joins as a new member and causes another rebalance. The nemesis
cannot spawn workload processes itself (nemesis/ and workloads/ never import each other), so the harness hands
the Nemesis a `ConsumerProcesses`: anything with these three methods, the workload's group members in a run.
Which member dies is drawn with the step's seed from those alive at that moment.
"""
from __future__ import annotations

import random
from typing import Protocol

from kafka_chaos.nemesis.base import Fault, FaultError


class ConsumerProcesses(Protocol):
    """The live consumer-group member processes a fault may kill (the harness supplies them)."""

    def killable(self) -> list[str]:
        """The names of the members alive now."""

    def kill(self, name: str) -> tuple[int, str]:
        """SIGKILL member `name`'s process and reap it; returns the pid it had and the name its replacement will
        have."""

    def restart(self, name: str) -> None:
        """Start the replacement of the killed member `name` (a new member, under the name `kill` returned)."""


class ConsumerKill(Fault):
    """kill -9 one group member's process (drawn by seed); heal starts its replacement, a new member."""

    name = "consumer-kill"
    description = "kill -9 a consumer-group member's process (drawn by seed); heal starts a new member in its place"

    def __init__(self, seed: int = 0, name: str | None = None):
        super().__init__(name)
        self.seed = seed
        self.processes: ConsumerProcesses | None = None

    def bind(self, processes: ConsumerProcesses | None) -> None:
        """Called by the Nemesis before start: the run's group members (None outside a run)."""
        self.processes = processes

    def _start(self, cluster) -> None:
        procs = self.processes
        if procs is None:
            raise FaultError("consumer-kill has no consumer processes to kill: it acts on a run's consumer group",
                             "use it inside a run: kafka-chaos run consumer-kill-leader-kill --consumer-mode subscribe")
        alive = sorted(procs.killable())
        if not alive:
            raise FaultError("no consumer-group member is alive to kill now", "run with --consumer-mode subscribe "
                             "and --consumers 1 or more")
        victim = random.Random(self.seed).choice(alive)
        pid, replacement = procs.kill(victim)
        self._applied([], {"effect": "consumer_kill", "signal": "SIGKILL", "consumer": victim, "pid": pid,
                           "replacement": replacement}, lambda: procs.restart(victim))


class ConsumerPause(ConsumerKill):
    """SIGSTOP one group member's process (drawn by seed); heal sends SIGCONT."""

    name = "consumer-pause"
    description = "freeze a consumer-group member's process (SIGSTOP, drawn by seed); heal thaws it (SIGCONT)"

    def _start(self, cluster) -> None:
        procs = self.processes
        if procs is None or not hasattr(procs, "pause"):
            raise FaultError("consumer-pause freezes a workload process that can be paused: the exactly-once "
                             "processors", "use it inside a run with --workload eos")
        alive = sorted(procs.killable())
        if not alive:
            raise FaultError("no consumer-group member is alive to pause now", "run with --workload eos")
        victim = random.Random(self.seed).choice(alive)
        pid = procs.pause(victim)
        self._applied([], {"effect": "consumer_pause", "signal": "SIGSTOP", "consumer": victim, "pid": pid},
                      lambda: procs.resume(victim))
