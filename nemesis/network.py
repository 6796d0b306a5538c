"""Network faults: packet drops (and random loss) between nodes and between the client host and nodes.

A fault resolves its targets at start into a list of drops `[src, dst]` (node ids or "client", exactly the
`drops` of docs/history.md), then turns each drop into iptables rules inside the namespaces involved: INPUT
`-s src` on dst and OUTPUT `-d dst` on src, so a cut holds even if one side restarts with a fresh namespace. Loss
puts its rule on one side only (two would square the probability). Node-level cuts cover every path: broker to
broker on :9092, broker to controller on :9093, and clients, who come from the cluster's gateway address.
"""
from __future__ import annotations

import random
import uuid
from concurrent.futures import ThreadPoolExecutor

from kafka_chaos.base.errors import UsageError
from kafka_chaos.cluster.node import NodeCommandError
from kafka_chaos.nemesis import netrules
from kafka_chaos.nemesis.base import Fault, Followers, Leader, Nodes, Target
from kafka_chaos.nemesis.events import CLIENT
from kafka_chaos.nemesis.netrules import Rule

Drop = tuple  # (src, dst): node id or CLIENT


def _all_ids(cluster) -> list[int]:
    return [n.id for n in cluster.nodes]


def _on_nodes(fn, nodes) -> dict[int, Exception | None]:
    """fn(node) on every node in parallel (docker exec is slow: a cut should start everywhere at once)."""
    if not nodes:
        return {}
    with ThreadPoolExecutor(len(nodes)) as pool:
        futures = {n.id: pool.submit(fn, n) for n in nodes}
    return {i: f.exception() for i, f in futures.items()}


def both_ways(a_side, b_side) -> list[Drop]:
    return [d for a in a_side for b in b_side for d in ((a, b), (b, a))]


class NetFault(Fault):
    """Base of drop faults: subclasses say which drops; this class installs and removes the rules."""

    effect = "net"
    probability: float | None = None

    def __init__(self, name: str | None = None):
        super().__init__(name)
        self.tag = f"{self.name}:{uuid.uuid4().hex[:8]}"
        self._rules: dict[int, list[Rule]] = {}

    def _resolve(self, cluster) -> tuple[list[int], list[Drop], dict]:
        """(nodes the fault is aimed at, drops, extra details): subclasses decide."""
        raise NotImplementedError

    def _ip(self, cluster, end) -> str:
        return cluster.gateway_ip if end == CLIENT else cluster.node(end).ip

    def _rules_by_node(self, cluster, drops: list[Drop]) -> dict[int, list[Rule]]:
        rules: dict[int, list[Rule]] = {}
        for src, dst in drops:
            if src != CLIENT:
                rules.setdefault(src, []).append(Rule("out", self._ip(cluster, dst), self.probability))
            if dst != CLIENT and (self.probability is None or src == CLIENT):
                rules.setdefault(dst, []).append(Rule("in", self._ip(cluster, src), self.probability))
        return rules

    def _start(self, cluster) -> None:
        if getattr(cluster.config, "link_proxy", False):
            raise UsageError(f"{self.name} cuts node addresses, but on a --link-proxy cluster the clients' and the "
                             "replication traffic arrive from the link proxy's address: the cut would not hold",
                             "run network faults on a cluster without --link-proxy (link faults need it)")
        nodes, drops, extra = self._resolve(cluster)
        if not drops:
            raise UsageError(f"{self.name}: the targets leave nothing to cut", "pick other targets")
        rules = self._rules_by_node(cluster, drops)
        # a stopped node has no namespace now; it gets its rules back when it restarts (reapply)
        live = [cluster.node(i) for i in rules if netrules.has_namespace(cluster.node(i))]
        results = _on_nodes(lambda n: netrules.add_rules(n, rules[n.id], self.tag), live)
        failed = [e for e in results.values() if e is not None]
        if failed:
            _on_nodes(lambda n: netrules.remove_rules(n, self.tag), [n for n in live if results[n.id] is None])
            raise failed[0]
        self._rules = rules
        details = {"effect": self.effect, "drops": [list(d) for d in drops]} | extra
        if self.probability is not None:
            details["probability"] = self.probability
        self._applied(nodes, details, lambda: self._remove(cluster))

    def _remove(self, cluster) -> None:
        live = [cluster.node(i) for i in self._rules if netrules.has_namespace(cluster.node(i))]
        failures = [str(e) for e in _on_nodes(lambda n: netrules.remove_rules(n, self.tag), live).values() if e]
        if failures:
            raise NodeCommandError("; ".join(failures), "run `kafka-chaos nemesis heal`")
        self._rules = {}

    def reapply(self, cluster, node_ids: set[int]) -> None:
        for node_id in node_ids & set(self._rules):
            netrules.add_rules(cluster.node(node_id), self._rules[node_id], self.tag)


class Isolate(NetFault):
    """Cut the target nodes from every other node and from the clients."""

    def __init__(self, target: Target, name: str = "isolate"):
        super().__init__(name)
        self.target = target

    def _resolve(self, cluster):
        ids = self.target.resolve(cluster)
        others = [i for i in _all_ids(cluster) if i not in ids] + [CLIENT]
        return ids, both_ways(ids, others), self.target.describe()


class ClientIsolate(NetFault):
    """The workload host cannot reach the target brokers (nor they it); brokers still reach each other."""

    def __init__(self, target: Target, name: str = "client-isolate"):
        super().__init__(name)
        self.target = target

    def _resolve(self, cluster):
        ids = self.target.resolve(cluster)
        return ids, both_ways(ids, [CLIENT]), self.target.describe()


class LeaderCut(NetFault):
    """The leader of a partition loses its followers but still reaches the controllers and the clients."""

    def __init__(self, topic: str, partition: int = 0, name: str = "leader-cut"):
        super().__init__(name)
        self.topic, self.partition = topic, partition

    def _resolve(self, cluster):
        leader = Leader(self.topic, self.partition).resolve(cluster)
        followers = Followers(self.topic, self.partition).resolve(cluster)
        return leader, both_ways(leader, followers), {"target": "leader", "topic": self.topic,
                                                      "partition": self.partition, "followers": followers}


class OneWay(NetFault):
    """A receives from B, B does not receive from A: packets from A to B are dropped."""

    def __init__(self, a: Target, b: Target, name: str = "one-way"):
        super().__init__(name)
        self.a, self.b = a, b

    def _resolve(self, cluster):
        a, b = self.a.resolve(cluster), self.b.resolve(cluster)
        if set(a) & set(b):
            raise UsageError(f"one-way needs two different nodes, got {a} and {b}", "pass --target A,B")
        return a + b, [(x, y) for x in a for y in b], {"from": a, "to": b}


class RandomOneWay(OneWay):
    """one-way between two brokers drawn with `seed`: the first drawn is A."""

    def __init__(self, seed: int, name: str = "one-way"):
        NetFault.__init__(self, name)
        self.seed = seed

    def _resolve(self, cluster):
        ids = sorted(b.id for b in cluster.brokers)
        if len(ids) < 2:
            raise UsageError(f"one-way needs two brokers, the cluster has {len(ids)}", "use 2 or more brokers")
        a, b = random.Random(self.seed).sample(ids, 2)
        return [a, b], [(a, b)], {"from": [a], "to": [b], "target": "random-brokers", "seed": self.seed}


def _population(cluster, ids: tuple[int, ...] | None, brokers_only: bool) -> list[int]:
    if ids:
        return Nodes(tuple(ids)).resolve(cluster)
    return [n.id for n in (cluster.brokers if brokers_only else cluster.nodes)]


class _ShuffledShape(NetFault):
    """A cut among a seeded shuffle of the nodes (split, bridge): the shape needs MIN_NODES, checked on the
    explicit targets before anything is touched and on the population at start."""
    MIN_NODES, SHAPE = 2, "a shape"

    def __init__(self, seed: int, ids: tuple[int, ...] | None, brokers_only: bool, name: str):
        super().__init__(name)
        self.seed, self.ids, self.brokers_only = seed, ids, brokers_only
        if ids is not None and len(ids) < self.MIN_NODES:
            raise UsageError(f"{self.SHAPE} needs at least {self.MIN_NODES} nodes, got {list(ids)}",
                             f"pass --target with {self.MIN_NODES} or more nodes")

    def _shuffled_population(self, cluster) -> tuple[list[int], list[int]]:
        pop = _population(cluster, self.ids, self.brokers_only)
        if len(pop) < self.MIN_NODES:
            raise UsageError(f"{self.SHAPE} needs at least {self.MIN_NODES} nodes, got {pop}",
                             f"use {self.MIN_NODES} or more nodes")
        return pop, random.Random(self.seed).sample(pop, len(pop))


class Split(_ShuffledShape):
    """Majority / minority: the nodes split in two sides, shuffled by `seed`, that cannot reach each other.

    The minority is (n - 1) // 2 nodes (at least 1). The client stays on both sides.
    """

    MIN_NODES, SHAPE = 2, "a split"

    def __init__(self, seed: int = 0, ids: tuple[int, ...] | None = None, brokers_only: bool = False,
                 name: str = "split"):
        super().__init__(seed, ids, brokers_only, name)

    def _resolve(self, cluster):
        pop, shuffled = self._shuffled_population(cluster)
        k = max(1, (len(pop) - 1) // 2)
        minority, majority = sorted(shuffled[:k]), sorted(shuffled[k:])
        return pop, both_ways(minority, majority), {"minority": minority, "majority": majority, "seed": self.seed}


class Bridge(_ShuffledShape):
    """Two halves that cannot reach each other, joined through one bridge node that reaches both (Jepsen's bridge)."""

    MIN_NODES, SHAPE = 3, "a bridge"

    def __init__(self, seed: int = 0, ids: tuple[int, ...] | None = None, brokers_only: bool = False,
                 name: str = "bridge"):
        super().__init__(seed, ids, brokers_only, name)

    def _resolve(self, cluster):
        pop, shuffled = self._shuffled_population(cluster)
        bridge, rest = shuffled[0], shuffled[1:]
        half = len(rest) // 2
        left, right = sorted(rest[:half]), sorted(rest[half:])
        return pop, both_ways(left, right), {"bridge": bridge, "halves": [left, right], "seed": self.seed}


class Loss(NetFault):
    """Each packet between the targets and their peers (default: every other node and the client) is dropped with
    `probability`, in both directions (iptables -m statistic --mode random)."""

    effect = "loss"

    def __init__(self, target: Target, probability: float = 0.3, peers: tuple[int, ...] | None = None,
                 include_client: bool = True, name: str = "loss"):
        if not 0 < probability <= 1:
            raise UsageError(f"loss probability {probability} must be in (0, 1]", "use e.g. --probability 0.3")
        super().__init__(name)
        self.target, self.probability, self.peers, self.include_client = target, probability, peers, include_client

    def _resolve(self, cluster):
        ids = self.target.resolve(cluster)
        peers = (Nodes(tuple(self.peers)).resolve(cluster) if self.peers
                 else [i for i in _all_ids(cluster) if i not in ids])
        peers = [p for p in peers if p not in ids] + ([CLIENT] if self.include_client and not self.peers else [])
        return ids, both_ways(ids, peers), self.target.describe()

