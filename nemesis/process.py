"""Process faults: kill -9, clean stop, pause, aimed at a Target; rolling restart; cascade kill; leader churn.

Each step is a docker operation on the node's container with an exact inverse: a killed or stopped node is
started again (same data, same IP), a paused node is unpaused.
"""
from __future__ import annotations

import logging
import random
import time
from concurrent.futures import ThreadPoolExecutor

from kafka_chaos.base.errors import HarnessError, UsageError
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


CHURN_KINDS = ("kill", "stop", "elect")      # kill -9 + restart, controlled shutdown + start, preferred election
CHURN_GRACE_S = 10.0     # a change may begin this long after --within has passed (waiting for an ISR candidate)
MOVE_MIN_WAIT_S = 8.0    # a killed leader's successor, waited for at least this long: a session (6 s) and margin


def check_churn(changes, within_s) -> None:
    """leader-churn's arguments: UsageError (exit 2) before anything is touched."""
    if isinstance(changes, bool) or not isinstance(changes, int) or changes < 1:
        raise UsageError(f"leader-churn: --changes {changes!r} must be a whole number >= 1",
                         "pass e.g. --changes 6 (leader changes in the churn)")
    if isinstance(within_s, bool) or not isinstance(within_s, (int, float)) or not within_s > 0:
        raise UsageError(f"leader-churn: --within {within_s!r} must be a number of seconds > 0",
                         "pass e.g. --within 30 (the churn's changes are spread over that many seconds)")


class LeaderChurn(Fault):
    """`changes` leader changes of topic/partition spread over `within_s` seconds, each a seeded pick of: kill -9
    of whoever leads, then its restart once another broker leads; a controlled shutdown (SIGTERM) of whoever
    leads, then its start; or a preferred-leader election (Admin electLeaders, PREFERRED), drawn only while the
    preferred replica is in the ISR and does not lead (else a kill or stop is drawn instead). A change waits until
    the ISR holds a replica besides the leader (one that can take over cleanly), and no change begins later than
    CHURN_GRACE_S after `within_s`: the ones left are not made, and the log says how many were.

    Every kill or stop is its own start/heal pair of rows (effect `kill` or `stop`, the broker, its times), every
    election its own (effect `elect`, `preferred` and `previous`), so the ISR model replays each change as it
    happened. A change begins at its slot (i * within / changes) or when the one before has ended, whichever is
    later: a killed leader is replaced only when its session lapses. Heal (the exact inverse) starts any broker
    still down and waits until every replica of the partition is back in its ISR."""

    name = "leader-churn"

    def __init__(self, topic: str, partition: int = 0, changes: int = 6, within_s: float = 30.0, seed: int = 0,
                 settle_s: float = 20.0, isr_timeout_s: float = 90.0):
        check_churn(changes, within_s)
        super().__init__()
        self.topic, self.partition, self.changes, self.within_s, self.seed = topic, partition, changes, within_s, seed
        self.settle_s, self.isr_timeout_s = settle_s, isr_timeout_s
        self._churned = False            # started and not yet healed (each change healed its own steps inline)
        self._deadline = 0.0             # no change begins after this (time.monotonic)

    @property
    def active(self) -> bool:
        return self._churned or super().active

    def _start(self, cluster) -> None:
        rng = random.Random(self.seed)
        t0 = time.monotonic()
        self._deadline = t0 + self.within_s + CHURN_GRACE_S
        self._churned = True
        for i in range(self.changes):
            time.sleep(max(0.0, t0 + i * self.within_s / self.changes - time.monotonic()))
            state = self._candidate(cluster)
            if state is None:
                log.warning("leader-churn: %d of %d changes made; the rest did not fit in --within %g s (+%g s)",
                            i, self.changes, self.within_s, CHURN_GRACE_S)
                return
            preferred = state.replicas[0]
            kind = rng.choice(CHURN_KINDS)
            if kind == "elect" and (state.leader == preferred or preferred not in state.isr):
                kind = rng.choice(CHURN_KINDS[:2])
            if kind == "elect" and self._elect(cluster, i, state.leader, preferred):
                continue
            self._cycle(cluster, i, "stop" if kind == "elect" else kind, state.leader)

    def _candidate(self, cluster):
        """The partition's state once a replica other than its leader is in the ISR, so that the change elects one
        cleanly (downing the ISR's last member would only take the partition offline); None once the churn's time
        is up. A restarted broker takes seconds to recover its logs and catch up before it is back in the ISR."""
        def ready():
            s = _leader_state(cluster, self.topic, self.partition)
            return s if s is not None and set(s.isr) - {s.leader} else None
        try:
            return wait_until(ready, max(0.0, self._deadline - time.monotonic()),
                              f"leader-churn: {self.topic}/{self.partition}'s ISR is its leader alone")
        except HarnessError:
            return None

    def _details(self, i: int) -> dict:
        return {"topic": self.topic, "partition": self.partition, "change": i + 1, "changes": self.changes}

    def _led(self, cluster):
        """The partition's state once it has a leader (a change can leave it leaderless for a moment)."""
        return wait_until(lambda: _leader_state(cluster, self.topic, self.partition), self.settle_s,
                          f"leader-churn: {self.topic}/{self.partition} has no leader")

    def _cycle(self, cluster, i: int, kind: str, leader: int) -> None:
        """Kill or stop the leader, wait until another broker leads, start it again: one start and one heal row."""
        node = cluster.node(leader)
        apply, undo = _ACTIONS[kind]
        self._begin()
        apply(node)
        self._applied([leader], _effect_details(kind) | {"target": "leader"} | self._details(i), lambda: undo(node))
        try:
            wait_until(lambda: (s := _leader_state(cluster, self.topic, self.partition)) and s.leader != leader,
                       min(self.settle_s, max(MOVE_MIN_WAIT_S, self._deadline - time.monotonic())),
                       f"no other broker leads after {kind} of broker {leader}")
        except HarnessError as e:
            log.warning("leader-churn change %d: %s; starting it again anyway", i + 1, e)
        Fault.heal(self, cluster)                # start it again, record the heal row

    def _elect(self, cluster, i: int, leader: int, preferred: int) -> bool:
        """A preferred-leader election; False (nothing recorded) where the controller refused it."""
        from confluent_kafka import ElectionType, TopicPartition

        self._begin()
        try:
            fut = cluster.admin().elect_leaders(ElectionType.PREFERRED, [TopicPartition(self.topic, self.partition)],
                                                request_timeout=15, operation_timeout=10)
            errors = [e for e in fut.result(timeout=20).values() if e is not None]
        except Exception as e:           # an old release without ElectLeaders, a controller failing over
            errors = [e]
        if errors:
            log.warning("leader-churn change %d: preferred election refused (%s); a controlled shutdown instead",
                        i + 1, errors[0])
            return False
        self._applied(sorted({leader, preferred}), {"effect": "elect", "election": "preferred", "preferred": preferred,
                                                    "previous": leader} | self._details(i), lambda: None)
        Fault.heal(self, cluster)                # nothing to undo: the heal row closes the election's window
        return True

    def heal(self, cluster, record=None) -> None:
        super().heal(cluster, record)            # any broker a failed change left down is started
        if self._churned:
            wait_until(lambda: _whole_isr(cluster, self.topic, self.partition), self.isr_timeout_s,
                       f"leader-churn heal: {self.topic}/{self.partition}'s ISR not full {self.isr_timeout_s:.0f} s "
                       "after the churn")
            self._churned = False


def _leader_state(cluster, topic: str, partition: int):
    try:
        s = cluster.partition(topic, partition)
    except HarnessError:
        raise
    except Exception:                            # no broker answered this time
        return None
    return s if s.leader is not None else None


def _whole_isr(cluster, topic: str, partition: int) -> bool:
    s = _leader_state(cluster, topic, partition)
    return s is not None and set(s.isr) == set(s.replicas)
