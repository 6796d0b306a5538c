"""Timelines and configurations the probes share. Times are seconds after T0; the model ticks every 0.1 s."""
from __future__ import annotations

from dataclasses import replace

from kafka_chaos.checkers.model import FaultEffect, ModelConfig, run_model
from kafka_chaos.checkers.model.config import TICK_NS

S = 1_000_000_000
T0 = 1_000 * S
TICK_S = TICK_NS / S
CONTROLLER = 101
ZK = 201


def kraft(version="4.4.0", acks=("1", "all"), min_isr=2, elr=None, unclean=False, **kw) -> ModelConfig:
    """Three brokers and a dedicated KRaft controller (the harness's clusters); Kafka's default timers."""
    base = ModelConfig(kafka_version=version, partitions=1, replication_factor=3, min_insync_replicas=min_isr,
                       unclean_leader_election=unclean, elr_enabled=version >= "4.1" if elr is None else elr,
                       acks=acks, brokers=(1, 2, 3), controllers=(CONTROLLER,))
    return replace(base, **kw)


def zookeeper(version="3.9.2", acks=("1", "all"), min_isr=2, unclean=False, **kw) -> ModelConfig:
    base = ModelConfig(kafka_version=version, partitions=1, replication_factor=3, min_insync_replicas=min_isr,
                       unclean_leader_election=unclean, acks=acks, brokers=(1, 2, 3), metadata_mode="zookeeper",
                       zookeeper=(ZK,), broker_session_timeout_ms=18_000)
    return replace(base, **kw)


def at(seconds: float) -> int:
    return T0 + round(seconds * 10) * TICK_NS


def proc(effect: str, node, t: float, action: str = "start") -> FaultEffect:
    """kill, power_loss, stop or pause of one node (action heal: it is back)."""
    return FaultEffect(t_ns=at(t), action=action, effect=effect, nodes=(node,), fault=effect)


def cut(pairs, t: float, action: str = "start", name: str = "cut") -> FaultEffect:
    """The links between each pair dropped both ways (a pair may name "client")."""
    drops = tuple((a, b) for x, y in pairs for a, b in ((x, y), (y, x)))
    nodes = tuple(sorted({n for p in pairs for n in p if n != "client"}))
    return FaultEffect(t_ns=at(t), action=action, effect="net", nodes=nodes, fault=name, drops=drops)


def replay(cfg: ModelConfig, faults, until: float = 300):
    return run_model(cfg, list(faults), t_begin=T0, t_end=at(until))


def elected(model) -> list[tuple[int, str]]:
    """(leader, how) of the elections that hold (not the transient ones of one-at-a-time fencing)."""
    return [(e["leader"], e["how"]) for e in model.events if e["event"] == "leader" and not e.get("transient")]


def fenced_at(model, node) -> list[float]:
    return [(e["t_ns"] - T0) / S for e in model.events if e["event"] == "fenced" and e["node"] == node]


def durability(model, t: float, acks: str) -> str:
    """The model's class for a write invoked and acked at t."""
    return model.durability(0, at(t), acks, at(t))[0]
