"""Every fault by name, with a one-line description: what the CLI, schedules and the scenario catalog build from.

`build(name, FaultArgs(...))` returns a fresh, unstarted Fault. Arguments a fault does not use are ignored, except
`targets`, which a fault that picks its own target (the leader, the controller) refuses.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from kafka_chaos.base.errors import UsageError
from kafka_chaos.nemesis import consumers, latency, links, network, process, reassign, storage, throttle
from kafka_chaos.nemesis.base import (
    AllBrokers,
    Controller,
    Fault,
    Leader,
    Nodes,
    RandomBrokers,
    RandomFollower,
    Target,
    ZooKeeperNodes,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FaultArgs:
    """Parameters of a fault. `targets`: explicit node ids; without them a fault picks its own, with `seed`."""
    targets: tuple[int, ...] | None = None
    topic: str = "chaos"
    partition: int = 0
    seed: int = 0
    probability: float = 0.3           # loss
    peers: tuple[int, ...] | None = None   # loss: the other end (default: every other node and the client)
    delay_ms: int = 100                # latency
    jitter_ms: int = 10
    interval_s: float = 2.0            # cascade-kill: between kills
    damage_file: str = "segment"       # damage: segment | index | leader-epoch-checkpoint | quorum-state
    damage_mode: str = "flip"          # damage: flip | truncate
    cpus: float = 0.01                 # slow: the CPU share left (0.01 = 1% of one core)
    link: str = "all"                  # link-*: which links of the target (all | client | replication | fetches)
    rate_kbps: int = 64                # link-bandwidth: KB/s each way
    changes: int = 6                   # leader-churn: leader changes
    within_s: float = 30.0             # leader-churn: the seconds they are spread over


@dataclass(frozen=True)
class FaultType:
    name: str
    description: str
    build: Callable[[FaultArgs], Fault]
    takes_target: bool = True
    check: Callable[[FaultArgs], None] | None = None     # bad arguments: UsageError when a plan names the fault


def _target(a: FaultArgs, default: Target) -> Target:
    return Nodes(tuple(a.targets)) if a.targets else default


def _one_random(a: FaultArgs) -> Target:
    return _target(a, RandomBrokers(a.seed, 1))


def _leader(a: FaultArgs) -> Target:
    return Leader(a.topic, a.partition)


def _one_way(a: FaultArgs) -> Fault:
    if a.targets is None:
        return network.RandomOneWay(a.seed)
    if len(a.targets) != 2:
        raise UsageError(f"one-way needs exactly two nodes A,B (A's packets to B are dropped), got {list(a.targets)}",
                         "pass --target A,B")
    return network.OneWay(Nodes((a.targets[0],)), Nodes((a.targets[1],)))


_TYPES = [
    # process
    FaultType("kill", "kill -9 a node (default: a random broker); heal restarts it",
              lambda a: process.ProcessFault("kill", _one_random(a), "kill")),
    FaultType("stop", "clean stop (SIGTERM, controlled shutdown) of a node; heal starts it",
              lambda a: process.ProcessFault("stop", _one_random(a), "stop")),
    FaultType("pause", "freeze a node's processes (docker pause); heal resumes them",
              lambda a: process.ProcessFault("pause", _one_random(a), "pause")),
    FaultType("minority-kill", "kill -9 a random minority of brokers at once; heal restarts them",
              lambda a: process.ProcessFault("kill", _target(a, RandomBrokers(a.seed, None)), "minority-kill")),
    FaultType("leader-kill", "kill -9 the current leader of TOPIC/PARTITION; heal restarts it",
              lambda a: process.ProcessFault("kill", _leader(a), "leader-kill"), takes_target=False),
    FaultType("follower-kill", "kill -9 one follower of TOPIC/PARTITION (drawn by seed); heal restarts it",
              lambda a: process.ProcessFault("kill", RandomFollower(a.topic, a.partition, a.seed), "follower-kill"),
              takes_target=False),
    FaultType("leader-stop", "clean stop of the current leader of TOPIC/PARTITION; heal starts it",
              lambda a: process.ProcessFault("stop", _leader(a), "leader-stop"), takes_target=False),
    FaultType("leader-pause", "pause the current leader of TOPIC/PARTITION; heal resumes it",
              lambda a: process.ProcessFault("pause", _leader(a), "leader-pause"), takes_target=False),
    FaultType("controller-kill", "kill -9 the active controller; heal restarts it",
              lambda a: process.ProcessFault("kill", Controller(), "controller-kill"), takes_target=False),
    FaultType("all-kill", "kill -9 every broker at once; heal restarts them all",
              lambda a: process.ProcessFault("kill", AllBrokers(), "all-kill"), takes_target=False),
    FaultType("rolling-restart", "clean restart of each broker in turn, waiting for a full ISR in between",
              lambda a: process.RollingRestart(), takes_target=False),
    FaultType("leader-churn", "--changes leader changes of TOPIC/PARTITION within --within seconds, each a seeded "
              "pick of kill -9 + restart of whoever leads, controlled shutdown + start, or a preferred-leader "
              "election; heal starts any broker still down and waits until the partition's ISR is whole",
              lambda a: process.LeaderChurn(a.topic, a.partition, a.changes, a.within_s, a.seed), takes_target=False,
              check=lambda a: process.check_churn(a.changes, a.within_s)),
    FaultType("cascade-kill", "kill TOPIC/PARTITION's followers one by one, then its leader; heal restarts the "
              "first-killed (out-of-sync) follower first",
              lambda a: process.CascadeKill(a.topic, a.partition, a.interval_s), takes_target=False),
    FaultType("cascade-kill-serial", "as cascade-kill, but heal restarts each broker only once the one before has "
              "registered: the leader, killed last, registers last (KAFKA-19522's trigger, docs/findings.md)",
              lambda a: process.CascadeKill(a.topic, a.partition, a.interval_s, name="cascade-kill-serial",
                                            register_each=True), takes_target=False),
    # network
    FaultType("isolate", "cut a node (default: a random broker) from every other node and the clients",
              lambda a: network.Isolate(_one_random(a), "isolate")),
    FaultType("leader-isolate", "cut the current leader of TOPIC/PARTITION from every node and the clients",
              lambda a: network.Isolate(_leader(a), "leader-isolate"), takes_target=False),
    FaultType("controller-isolate", "cut the active controller from every node",
              lambda a: network.Isolate(Controller(), "controller-isolate"), takes_target=False),
    FaultType("zookeeper-isolate", "cut the ZooKeeper node from every broker and the clients (ZooKeeper mode)",
              lambda a: network.Isolate(ZooKeeperNodes(), "zookeeper-isolate"), takes_target=False),
    FaultType("split", "majority / minority partition of all nodes (or --target nodes), shuffled by seed",
              lambda a: network.Split(a.seed, a.targets, name="split")),
    FaultType("bridge", "two halves that cannot reach each other, joined through one node (3+ nodes)",
              lambda a: network.Bridge(a.seed, a.targets, name="bridge")),
    FaultType("one-way", "A receives from B, B does not receive from A (--target A,B; default two random brokers)",
              _one_way),
    FaultType("leader-cut", "the leader of TOPIC/PARTITION loses its followers, still reaches controller and clients",
              lambda a: network.LeaderCut(a.topic, a.partition), takes_target=False),
    FaultType("client-isolate", "the workload host cannot reach the target brokers (default: a random broker)",
              lambda a: network.ClientIsolate(_one_random(a))),
    FaultType("loss", "drop packets between a node and its peers with --probability P (iptables statistic)",
              lambda a: network.Loss(_one_random(a), a.probability, a.peers)),
    # storage (power loss needs the cluster's power-loss layer: --power-loss-fs)
    FaultType("power-loss", "power off a broker (default: a random one): killed, and its disk keeps only what was "
              "fsync'ed; heal powers it on", lambda a: storage.PowerLoss(_one_random(a), "power-loss")),
    FaultType("leader-power-loss", "power off the current leader of TOPIC/PARTITION (unsynced data gone); heal "
              "powers it on", lambda a: storage.PowerLoss(_leader(a), "leader-power-loss"), takes_target=False),
    FaultType("power-loss-all", "power off every broker at once (unsynced data gone on all); heal powers them on",
              lambda a: storage.PowerLoss(AllBrokers(), "power-loss-all"), takes_target=False),
    FaultType("disk-full", "fill a broker's disk (default: a random one) until Kafka takes its log dir offline and "
              "halts; heal frees it and starts the broker",
              lambda a: storage.DiskFull(_one_random(a), name="disk-full")),
    FaultType("leader-disk-full", "fill the disk of the current leader of TOPIC/PARTITION; heal frees it, starts it",
              lambda a: storage.DiskFull(_leader(a), name="leader-disk-full"), takes_target=False),
    FaultType("damage", "kill one broker (default: a follower of TOPIC/PARTITION) and flip bits in or truncate "
              "--damage-file of its log dir (--damage-mode); heal restarts it",
              lambda a: storage.Damage(_target(a, RandomFollower(a.topic, a.partition, a.seed)), a.damage_file,
                                       a.damage_mode, a.topic, a.partition, a.seed, "damage")),
    # latency
    FaultType("latency", "delay a node's packets by --delay-ms ± --jitter-ms (tc netem; refused without netem)",
              lambda a: latency.Latency(_one_random(a), a.delay_ms, a.jitter_ms)),
]

# slow nodes (nemesis/throttle.py)
_TYPES += [
    FaultType("slow", "cap a node's CPU at --cpus (default: a random broker, 1% of a core); heal restores its limits",
              lambda a: throttle.Slow(_one_random(a), a.cpus, "slow")),
    FaultType("follower-slow", "cap one follower of TOPIC/PARTITION (drawn by seed) at --cpus so it falls out of "
              "the ISR; heal restores its limits",
              lambda a: throttle.Slow(RandomFollower(a.topic, a.partition, a.seed), a.cpus, "follower-slow"),
              takes_target=False),
    # membership (nemesis/reassign.py)
    FaultType("partition-reassign", "move TOPIC/PARTITION's replicas: one (drawn by seed) swapped for a broker "
              "outside the set (needs more brokers than replicas); heal moves them back",
              lambda a: reassign.PartitionReassign(a.topic, a.partition, a.seed), takes_target=False),
]

# slow links through the cluster's Toxiproxy (nemesis/links.py; the cluster runs with --link-proxy)
_TYPES += [
    FaultType("link-slow", "add --delay-ms ± --jitter-ms to a broker's links (default: a random broker; --link all, "
              "client, replication or fetches) through the link proxy; heal removes it",
              lambda a: links.LinkFault(_one_random(a), "latency", a.link, a.delay_ms, a.jitter_ms, name="link-slow")),
    FaultType("link-bandwidth", "cap a broker's links (--link as link-slow) at --rate-kbps KB/s each way through "
              "the link proxy; heal removes the cap",
              lambda a: links.LinkFault(_one_random(a), "bandwidth", a.link, rate_kbps=a.rate_kbps,
                                        name="link-bandwidth")),
    FaultType("follower-link-slow", "add --delay-ms ± --jitter-ms to the fetch links of one follower of "
              "TOPIC/PARTITION (drawn by seed) through the link proxy; heal removes it",
              lambda a: links.LinkFault(RandomFollower(a.topic, a.partition, a.seed), "latency", "fetches",
                                        a.delay_ms, a.jitter_ms, name="follower-link-slow"), takes_target=False),
    FaultType("follower-link-bandwidth", "cap the fetch links of one follower of TOPIC/PARTITION (drawn by seed) at "
              "--rate-kbps KB/s through the link proxy, so it falls behind; heal removes the cap",
              lambda a: links.LinkFault(RandomFollower(a.topic, a.partition, a.seed), "bandwidth", "fetches",
                                        rate_kbps=a.rate_kbps, name="follower-link-bandwidth"), takes_target=False),
]

# client processes (nemesis/consumers.py): the run's consumer group, handed to the Nemesis by the harness
_TYPES += [
    FaultType("consumer-kill", consumers.ConsumerKill.description, lambda a: consumers.ConsumerKill(a.seed),
              takes_target=False),
    FaultType("consumer-pause", consumers.ConsumerPause.description, lambda a: consumers.ConsumerPause(a.seed),
              takes_target=False),
]

REGISTRY: dict[str, FaultType] = {t.name: t for t in _TYPES}

# One word order, the scenarios' too: whom the fault hits, then what it does (leader-kill, controller-isolate).
# The verb-first names these faults had before still resolve, with a warning; `nemesis list` shows them.
ALIASES: dict[str, str] = {
    "kill-minority": "minority-kill", "kill-leader": "leader-kill", "kill-follower": "follower-kill",
    "stop-leader": "leader-stop", "pause-leader": "leader-pause", "kill-controller": "controller-kill",
    "kill-all": "all-kill", "isolate-leader": "leader-isolate", "isolate-controller": "controller-isolate",
    "isolate-zookeeper": "zookeeper-isolate",
}


def names() -> list[str]:
    return list(REGISTRY)


def aliases_of(name: str) -> list[str]:
    """The old spellings that resolve to fault `name`."""
    return [old for old, new in ALIASES.items() if new == name]


def canonical(name: str) -> str:
    """`name`, or the fault an old spelling stands for (with a deprecation warning in the log)."""
    if name in ALIASES:
        log.warning("fault '%s' is now called '%s'; the old name still works but is deprecated", name, ALIASES[name])
        return ALIASES[name]
    return name


def fault_type(name: str) -> FaultType:
    try:
        return REGISTRY[canonical(name)]
    except KeyError:
        raise UsageError(f"unknown fault '{name}'", f"see `kafka-chaos nemesis list`; known: {', '.join(REGISTRY)}")


def check(name: str, args: FaultArgs) -> None:
    """UsageError where `args` are no arguments fault `name` can run with (a plan's or a schedule file's step)."""
    t = fault_type(name)
    if t.check is not None:
        t.check(args)


def build(name: str, args: FaultArgs | None = None) -> Fault:
    """A fresh fault `name` with `args`; UsageError on an unknown name or a target the fault does not take."""
    t = fault_type(name)
    name = t.name
    args = args or FaultArgs()
    if args.targets is not None and not t.takes_target:
        raise UsageError(f"{name} picks its own target; it takes no --target", "leave --target out")
    if args.targets is not None and not args.targets:
        raise UsageError(f"{name}: --target names no node", "pass node ids, e.g. --target 1,2")
    return t.build(args)
