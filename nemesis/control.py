"""The Nemesis: starts and heals faults against one cluster, records every event, and heals everything at the end.

It keeps the active faults so that heal_all can undo them (recording their heal rows) before sweeping every node
back to its baseline: unpaused, running, no iptables rule or netem qdisc of ours, no CPU quota, no toxic on the
link proxy. When a process fault restarts a node, the node comes back with a fresh network namespace; active
network faults put their rules back on it.
"""
from __future__ import annotations

import logging
import threading

from kafka_chaos.base.errors import HarnessError
from kafka_chaos.nemesis import netrules, throttle
from kafka_chaos.nemesis.base import Fault
from kafka_chaos.nemesis.consumers import ConsumerKill
from kafka_chaos.nemesis.events import Record, discard

log = logging.getLogger(__name__)


def _restarted_nodes(events) -> set[int]:
    return {n for e in events if e.action == "heal" and e.details["effect"] in ("kill", "stop", "power_loss", "damage")
            for n in e.nodes}


class Nemesis:
    def __init__(self, cluster, record: Record = discard, consumers=None):
        self.cluster = cluster
        self.record = record
        self.consumers = consumers      # a run's group members (nemesis.consumers.ConsumerProcesses), for consumer-kill
        self.active: list[Fault] = []
        self._lock = threading.RLock()

    def start(self, fault: Fault) -> Fault:
        with self._lock:
            seen = len(fault.events)
            if isinstance(fault, ConsumerKill):
                fault.bind(self.consumers)
            try:
                fault.start(self.cluster, self.record)
            finally:
                if fault.active and fault not in self.active:   # a multi-step fault may fail half-way
                    self.active.append(fault)
                self._after(fault, seen)
        return fault

    def heal(self, fault: Fault) -> None:
        with self._lock:
            seen = len(fault.events)
            try:
                fault.heal(self.cluster, self.record)
            finally:
                if not fault.active and fault in self.active:
                    self.active.remove(fault)
                self._after(fault, seen)

    def _after(self, fault: Fault, seen: int) -> None:
        restarted = _restarted_nodes(fault.events[seen:])
        if not restarted:
            return
        for other in self.active:
            if other is not fault:
                try:
                    other.reapply(self.cluster, restarted)
                except HarnessError as e:
                    log.warning("could not put %s back on restarted nodes %s: %s", other.name, restarted, e)

    def heal_all(self) -> list[str]:
        """Heal every active fault (last started first), then sweep every node. Never raises: returns problems."""
        problems = []
        with self._lock:
            for fault in list(reversed(self.active)):
                try:
                    self.heal(fault)
                except Exception as e:
                    problems.append(f"healing {fault.name}: {e}")
                    log.warning("heal-all: healing %s failed: %s", fault.name, e)
            self.active.clear()
            problems += sweep(self.cluster)
        return problems


def sweep(cluster) -> list[str]:
    """Every node running unpaused with no rule or qdisc of ours; works without knowing which faults ran."""
    problems = []
    for node in cluster.nodes:
        try:
            state = node.state()
            if state == "paused":
                node.unpause()
            elif state != "running":
                if node.role == "broker" and getattr(cluster.config, "power_loss_fs", False):
                    cluster.power_layer(node.id).mount()     # a power cut that stopped half-way
                node.start()
            netrules.sweep(node)
            if throttle.unthrottle(node):
                log.warning("heal-all: lifted a CPU quota left on %s", node)
            left = netrules.rules_of_ours(node)
            if left:
                problems.append(f"{node}: rules left after sweep: {left}")
        except Exception as e:
            problems.append(f"{node}: {e}")
            log.warning("heal-all: %s: %s", node, e)
    if getattr(cluster.config, "link_proxy", False):
        try:
            proxy = cluster.link_proxy()
            proxy.reset()                            # every toxic gone (nemesis/links.py)
            left = {p: t for p, t in proxy.all_toxics().items() if t}
            if left:
                problems.append(f"link proxy: toxics left after reset: {left}")
        except Exception as e:
            problems.append(f"link proxy: {e}")
            log.warning("heal-all: link proxy: %s", e)
    return problems
