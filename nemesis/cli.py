"""`kafka-chaos nemesis FAULT | heal | list`: faults by hand against a running cluster.

`nemesis FAULT --duration S` applies the fault, holds it, and heals it (also on Ctrl-C / SIGTERM). Without
--duration the fault stays until `kafka-chaos nemesis heal`, which needs no memory of what ran: it unpauses and
starts every node and removes every rule of ours.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from kafka_chaos.base import exits
from kafka_chaos.base.errors import UsageError
from kafka_chaos.nemesis import registry
from kafka_chaos.nemesis.control import Nemesis, sweep
from kafka_chaos.nemesis.events import FaultEvent
from kafka_chaos.nemesis.registry import FaultArgs
from kafka_chaos.nemesis.schedule import exit_on_signals


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "nemesis", help="apply a fault to a running cluster, heal it, or list the faults",
        description="Apply FAULT to a running cluster (see `kafka-chaos nemesis list`), `heal` every fault, "
                    "or `list` the faults.")
    p.add_argument("fault", metavar="FAULT", help="a fault name, `heal` or `list`")
    p.add_argument("--name", default="kafka-chaos", help="cluster name (default: kafka-chaos)")
    p.add_argument("--target", type=_ids, help="node ids, comma separated (brokers 1..N, controllers 101..)")
    p.add_argument("--topic", default="chaos", help="topic whose partition leader-aimed faults target")
    p.add_argument("--partition", type=int, default=0)
    p.add_argument("--seed", type=int, default=0, help="seed of random targets (random broker, split shuffle)")
    p.add_argument("--probability", type=float, default=0.3, help="loss: drop probability per packet")
    p.add_argument("--peers", type=_ids, help="loss: the other end (default: every other node and the client)")
    p.add_argument("--delay-ms", type=int, default=100, help="latency: delay")
    p.add_argument("--jitter-ms", type=int, default=10, help="latency: jitter")
    p.add_argument("--interval", type=float, default=2.0, help="cascade-kill: seconds between kills")
    p.add_argument("--damage-file", default="segment",
                   help="damage: segment, index, leader-epoch-checkpoint or quorum-state (default segment)")
    p.add_argument("--damage-mode", default="flip", help="damage: flip (bits) or truncate (default flip)")
    p.add_argument("--cpus", type=float, default=0.01, help="slow: the CPU share left, e.g. 0.01 = 1%% of a core")
    p.add_argument("--link", default="all", choices=("all", "client", "replication", "fetches"),
                   help="link-*: which links of the target brokers (default all)")
    p.add_argument("--rate-kbps", type=int, default=64, help="link-bandwidth: KB/s each way (default 64)")
    p.add_argument("--changes", type=int, default=6, help="leader-churn: leader changes (default 6)")
    p.add_argument("--within", type=float, default=30.0,
                   help="leader-churn: seconds the changes are spread over (default 30)")
    p.add_argument("--duration", type=float, help="hold the fault S seconds, then heal it (default: leave it on)")
    p.set_defaults(func=_cmd_nemesis)


def _ids(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of node ids (e.g. 1,2 or 101)")


def _print_event(ev: FaultEvent) -> None:
    print(json.dumps(ev.row()), flush=True)


def _cmd_nemesis(args) -> int:
    if args.fault == "list":
        width = max(map(len, registry.names()))
        for t in registry.REGISTRY.values():
            old = registry.aliases_of(t.name)
            print(f"{t.name:<{width}}  {t.description}" + (f" (alias: {', '.join(old)})" if old else ""))
        return 0
    if args.duration is not None and args.duration <= 0:
        raise UsageError(f"--duration {args.duration}: must be > 0", "pass a positive number of seconds")
    fault = None
    if args.fault != "heal":          # build first: unknown fault or bad arguments fail before touching anything
        fault = registry.build(args.fault, FaultArgs(
            targets=args.target, topic=args.topic, partition=args.partition, seed=args.seed,
            probability=args.probability, peers=args.peers, delay_ms=args.delay_ms, jitter_ms=args.jitter_ms,
            interval_s=args.interval, damage_file=args.damage_file, damage_mode=args.damage_mode,
            cpus=args.cpus, link=args.link, rate_kbps=args.rate_kbps,
            changes=args.changes, within_s=args.within))
    from kafka_chaos.cluster.kafka_cluster import KafkaCluster

    cluster = KafkaCluster.attach(args.name)
    if fault is None:
        problems = sweep(cluster)
        for p in problems:
            print(f"heal: {p}", file=sys.stderr)
        print(f"healed cluster {args.name}: every node running, no rule of ours left" if not problems
              else f"heal of cluster {args.name} left problems")
        return exits.UNUSABLE if problems else exits.VALID
    nemesis = Nemesis(cluster, record=_print_event)
    if args.duration is None:
        nemesis.start(fault)
        if fault.active:
            print(f"{fault.name} is on; heal it with: kafka-chaos nemesis heal --name {args.name}", file=sys.stderr)
        return 0
    with exit_on_signals():
        try:
            nemesis.start(fault)
            time.sleep(args.duration)
        finally:
            problems = nemesis.heal_all()
    for p in problems:
        print(f"heal: {p}", file=sys.stderr)
    return exits.UNUSABLE if problems else exits.VALID
