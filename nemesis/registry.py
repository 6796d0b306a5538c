"""Every fault by name, with a one-line description: what the CLI, schedules and the scenario catalog build from.

`build(name, FaultArgs(...))` returns a fresh, unstarted Fault. Arguments a fault does not use are ignored, except
`targets`, which a fault that picks its own target (the leader, the controller) refuses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from base.errors import UsageError
from nemesis import latency, network, process
from nemesis.base import AllBrokers, Controller, Fault, Leader, Nodes, RandomBrokers, RandomFollower, Target


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


@dataclass(frozen=True)
class FaultType:
    name: str
    description: str
    build: Callable[[FaultArgs], Fault]
    takes_target: bool = True


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
    FaultType("kill-minority", "kill -9 a random minority of brokers at once; heal restarts them",
              lambda a: process.ProcessFault("kill", _target(a, RandomBrokers(a.seed, None)), "kill-minority")),
    FaultType("kill-leader", "kill -9 the current leader of TOPIC/PARTITION; heal restarts it",
              lambda a: process.ProcessFault("kill", _leader(a), "kill-leader"), takes_target=False),
    FaultType("kill-follower", "kill -9 one follower of TOPIC/PARTITION (drawn by seed); heal restarts it",
              lambda a: process.ProcessFault("kill", RandomFollower(a.topic, a.partition, a.seed), "kill-follower"),
              takes_target=False),
    FaultType("stop-leader", "clean stop of the current leader of TOPIC/PARTITION; heal starts it",
              lambda a: process.ProcessFault("stop", _leader(a), "stop-leader"), takes_target=False),
    FaultType("pause-leader", "pause the current leader of TOPIC/PARTITION; heal resumes it",
              lambda a: process.ProcessFault("pause", _leader(a), "pause-leader"), takes_target=False),
    FaultType("kill-controller", "kill -9 the active controller; heal restarts it",
              lambda a: process.ProcessFault("kill", Controller(), "kill-controller"), takes_target=False),
    FaultType("kill-all", "kill -9 every broker at once; heal restarts them all",
              lambda a: process.ProcessFault("kill", AllBrokers(), "kill-all"), takes_target=False),
    FaultType("rolling-restart", "clean restart of each broker in turn, waiting for a full ISR in between",
              lambda a: process.RollingRestart(), takes_target=False),
    FaultType("cascade-kill", "kill TOPIC/PARTITION's followers one by one, then its leader; heal restarts the "
              "first-killed (out-of-sync) follower first",
              lambda a: process.CascadeKill(a.topic, a.partition, a.interval_s), takes_target=False),
    # network
    FaultType("isolate", "cut a node (default: a random broker) from every other node and the clients",
              lambda a: network.Isolate(_one_random(a), "isolate")),
    FaultType("isolate-leader", "cut the current leader of TOPIC/PARTITION from every node and the clients",
              lambda a: network.Isolate(_leader(a), "isolate-leader"), takes_target=False),
    FaultType("isolate-controller", "cut the active controller from every node",
              lambda a: network.Isolate(Controller(), "isolate-controller"), takes_target=False),
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
    # latency
    FaultType("latency", "delay a node's packets by --delay-ms ± --jitter-ms (tc netem; refused without netem)",
              lambda a: latency.Latency(_one_random(a), a.delay_ms, a.jitter_ms)),
]

REGISTRY: dict[str, FaultType] = {t.name: t for t in _TYPES}


def names() -> list[str]:
    return list(REGISTRY)


def fault_type(name: str) -> FaultType:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UsageError(f"unknown fault '{name}'", f"see `kafka-chaos nemesis list`; known: {', '.join(REGISTRY)}")


def build(name: str, args: FaultArgs | None = None) -> Fault:
    """A fresh fault `name` with `args`; UsageError on an unknown name or a target the fault does not take."""
    t = fault_type(name)
    args = args or FaultArgs()
    if args.targets is not None and not t.takes_target:
        raise UsageError(f"{name} picks its own target; it takes no --target", "leave --target out")
    if args.targets is not None and not args.targets:
        raise UsageError(f"{name}: --target names no node", "pass node ids, e.g. --target 1,2")
    return t.build(args)
