"""Process faults: kill -9, clean stop, pause, aimed at a Target; rolling restart; cascade kill.

Each step is a docker operation on the node's container with an exact inverse: a killed or stopped node is
started again (same data, same IP), a paused node is unpaused.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

from kafka_chaos.base.errors import HarnessError
from kafka_chaos.base.waiting import wait_until
from kafka_chaos.nemesis.base import Fault, FaultError, Followers, Leader, Target

log = logging.getLogger(__name__)

_ACTIONS = {  # effect -> (apply, undo) on a Node
    "kill": (lambda n: n.kill("SIGKILL"), lambda n: n.start()),
    "stop": (lambda n: n.stop(timeout=60), lambda n: n.start()),
    "pause": (lambda n: n.pause(), lambda n: n.unpause()),
}


def _on_all(fn, nodes) -> None:
    """Run `fn(node)` on every node at the same moment (all-kill means all at once)."""
    if len(nodes) == 1:
        fn(nodes[0])
        return
    with ThreadPoolExecutor(len(nodes)) as pool:
        for f in [pool.submit(fn, n) for n in nodes]:
            f.result()


def _effect_details(effect: str) -> dict:
    return {"effect": effect, "signal": "SIGKILL"} if effect == "kill" else {"effect": effect}


class ProcessFault(Fault):
    """Kill (-9), stop (SIGTERM, controlled shutdown) or pause the target's nodes, all at once; heal reverses."""

    def __init__(self, effect: str, target: Target, name: str | None = None):
        if effect not in _ACTIONS:
            raise ValueError(f"unknown process effect {effect}")
        super().__init__(name or effect)
        self.effect, self.target = effect, target

    def _start(self, cluster) -> None:
        ids = self.target.resolve(cluster)
        nodes = [cluster.node(i) for i in ids]
        apply, undo = _ACTIONS[self.effect]
        try:
            _on_all(apply, nodes)
        except BaseException:
            _on_all(undo, nodes)              # a half-applied step is undone, not left behind
            raise
        self._applied(ids, _effect_details(self.effect) | self.target.describe(), lambda: _on_all(undo, nodes))


def _registered(cluster, broker_id: int) -> bool:
    return broker_id in cluster.admin().list_topics(timeout=3).brokers


def full_isr(cluster, topics: list[str] | None = None) -> bool:
    """Every partition of `topics` (default: every non-internal topic) has a leader and its whole replica set in ISR.

    A broker that has just restarted may answer "unknown topic" until it has caught up on metadata: not yet.
    """
    try:
        for t in topics if topics is not None else cluster.topics():
            for s in cluster.describe(t):
                if s.leader is None or set(s.isr) != set(s.replicas):
                    return False
    except HarnessError:
        return False
    return True


class RollingRestart(Fault):
    """Clean stop / start of each broker in turn, waiting for a full ISR before the next one.

    Each broker's stop and start is its own start/heal event pair (effect `stop`), so the history says exactly
    which broker was down when. Heal starts any broker a failed restart left down.
    """

    name = "rolling-restart"

    def __init__(self, topics: list[str] | None = None, timeout_s: float = 90, name: str | None = None):
        super().__init__(name)
        self.topics, self.timeout_s = topics, timeout_s

    def _start(self, cluster) -> None:
        for b in sorted(cluster.brokers, key=lambda n: n.id):
            self._begin()
            b.stop(timeout=60)
            self._applied([b.id], {"effect": "stop", "target": "rolling", "order": [n.id for n in cluster.brokers]},
                          b.start)
            self.heal(cluster)                 # start it again and record the heal row
            wait_until(lambda: _registered(cluster, b.id) and full_isr(cluster, self.topics), self.timeout_s,
                       f"rolling restart: ISR not full {self.timeout_s:.0f} s after restarting broker {b.id}")


class CascadeKill(Fault):
    """Kill a partition's followers one after another, then its leader; heal restarts the first-killed
    (most out-of-sync) follower first, waits until it has registered, then the others in kill order."""

    name = "cascade-kill"

    def __init__(self, topic: str, partition: int = 0, interval_s: float = 2.0, register_timeout_s: float = 30,
                 name: str | None = None, register_each: bool = False):
        super().__init__(name)
        self.topic, self.partition = topic, partition
        self.interval_s, self.register_timeout_s = interval_s, register_timeout_s
        # register_each: every restart waits until that broker has registered, so the leader, killed last, also
        # registers last, after every other replica (cascade-kill-serial; see the README's "Historical bugs")
        self.register_each = register_each

    def _start(self, cluster) -> None:
        followers = Followers(self.topic, self.partition).resolve(cluster)
        leader = Leader(self.topic, self.partition).resolve(cluster)[0]
        if not followers:
            raise FaultError(f"{self.topic}/{self.partition} has no followers", "use a topic with replication > 1")
        order = followers + [leader]
        base = {"effect": "kill", "signal": "SIGKILL", "target": "cascade", "topic": self.topic,
                "partition": self.partition, "order": order}
        for i, node_id in enumerate(order):
            if i:
                time.sleep(self.interval_s)
            node = cluster.node(node_id)
            self._begin()
            node.kill("SIGKILL")
            self._applied([node_id], base | {"role": "leader" if node_id == leader else "follower"},
                          self._restarter(cluster, node, first=(i == 0) or self.register_each))

    def _restarter(self, cluster, node, first: bool):
        def restart():
            node.start()
            if first:
                try:
                    wait_until(lambda: _registered(cluster, node.id), self.register_timeout_s,
                               f"broker {node.id} did not register")
                except Exception as e:    # keep healing the rest: never leave nodes down
                    log.warning("cascade-kill heal: %s", e)
        return restart

    def _heal_order(self, steps):
        return list(steps)                    # first killed, first restarted
