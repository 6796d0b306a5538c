"""Who the cluster elected against who the model elected: the self-check's look at the leader itself.

observed.py checks how each election the samples show happened (from the ISR or not) against the model's
predictions. This checks who: every election in cluster.parquet (observed_events, a new leader persisting two
samples) must be one that some replay of the model (the recorded timing, the late one, and the keeping-up one for a
slowed node; run_model) also made, the same broker for the same partition within TOLERANCE_NS of it (or of the span
of an election that waited for a restarted broker's start-up). An election no replay made is a `leader_mismatch`
disagreement naming the broker the cluster elected, the brokers the replays elected nearby (or nobody), and the
candidates the model had then (its ISR, ELR and fenced brokers). Like every disagreement it is a finding about the
model, not a Kafka violation: it never changes the verdict.

Not flagged: a preferred-leader election, which the model does not replay. Kafka moves leadership back to a
partition's preferred replica by itself (auto.leader.rebalance.enable, on by default and left on by the harness:
the KRaft controller runs it leader.imbalance.check.interval.seconds, 300 s, after leaders became imbalanced,
QuorumController.maybeScheduleNextBalancePartitionLeaders; the ZooKeeper controller every 300 s), and a cluster
kept up across runs can carry that schedule into any run. The samples tell it apart from a failover: the old
leader is still in the ISR beside the new one, which was in the ISR before. Every failover (a fencing, a
controlled shutdown, an election after an unclean loss) takes the old leader out of the ISR in the same change
(ReplicationControlManager, PartitionChangeBuilder). Such a move is flagged only if a replay elected another
broker there.
"""
from __future__ import annotations

import pandas as pd

from kafka_chaos.checkers.model.config import REPLICATION_SLACK_NS, TICK_NS
from kafka_chaos.checkers.model.observed import (
    TOLERANCE_NS,
    _elections,
    _members,
    _near,
    _partitions,
    _rows,
    _span,
    observed_events,
)
from kafka_chaos.checkers.model.windows import Cause, Window

REPLAYS = ("recorded", "late", "keeping up")         # run_model's timings, in the order of [model, *alternatives]


def replay_names(replays: list) -> list[str]:
    """The name of each of [model, *alternatives]: REPLAYS in order, then those replaying another fencing order
    (their `fenced` events carry `fence_rotation`, controller._fence), which come last."""
    names = list(REPLAYS[:2])
    for r in replays[2:]:
        k = next((x["fence_rotation"] for x in r.events if x.get("fence_rotation")), None)
        names.append(REPLAYS[2] if k is None else f"fencing order {k}")
    return names[:len(replays)]


def leader_mismatches(model, samples: pd.DataFrame, events: list[dict] | None = None) -> list[dict]:
    """A `leader_mismatch` disagreement for each election in the samples that no replay of the model made.
    events: observed_events(samples), if already computed."""
    events = observed_events(samples) if events is None else events
    elections = [e for e in events if e["event"] == "election"]
    if not elections:
        return []
    replays = [model, *getattr(model, "alternatives", ())]
    first, out = None, []
    for e in elections:
        p, t, leader = e["partition"], e["t_ns"], e["leader"]
        near = [(name, x) for name, r in zip(replay_names(replays), replays) for x in r.events
                if x.get("event") == "leader" and _partition(x) == p and _near([_span(x)], t)]
        if any(x.get("leader") is not None and int(x["leader"]) == leader for _, x in near):
            continue
        if not near and _preferred_move(e):
            continue
        if _seen_at_model_election(samples, replays, p, t, leader) or _unelectable_then(replays, leader, t):
            continue
        first = _first_samples(samples) if first is None else first      # only once something disagrees
        out.append(_mismatch(e, near, _model_state(model.events, p, t, near, first.get(p))))
    return out


def _seen_at_model_election(samples: pd.DataFrame, replays: list, p: int, t: int, leader: int) -> bool:
    """The samples showed `leader` leading p already near a replay's earlier election of it: the election was seen,
    then hidden by stale samples, and counted only when it persisted. The sampler's describe goes to whichever
    broker the admin client picks, and a broker behind on the metadata log (or just restarted, before it has
    replayed it) answers with the old leader and ISR. Seen on 2026-11-27 (leader-kill acks=all, load ~30): broker 3
    killed at 10 s, broker 2 elected at its fencing; samples at 19.8 and 26.1 s showed 2, those at 21.7, 22.3 and
    27.7 s showed the dead broker 3 with its old ISR [3, 2, 1], so the persisting election was placed at 29.5 s,
    beyond the tolerance of the model's election at ~16 s."""
    if samples is None or not len(samples):
        return False
    mine = samples[(samples["partition"] == p) & (samples["t_ns"] <= t)]
    shown = [int(ts) for ts, x in zip(mine["t_ns"], mine["leader"]) if _leader_is(x, leader)]
    spans = [_span(x) for r in replays for x in r.events
             if x.get("event") == "leader" and _partition(x) == p and _leader_is(x.get("leader"), leader)
             and int(x["t_ns"]) <= t]
    return any(_near(spans, ts) for ts in shown)


DOWN_EFFECTS = ("kill", "power_loss", "stop", "damage", "pause")


def down_then(model, broker: int, t: int) -> bool:
    """KRaft: the broker's process was down (killed, powered off, stopped, paused) at t, by the fault history.
    Down is not unelectable: the controller elects any broker it counts active (ReplicationControlManager's
    isAcceptableLeader is ClusterControlManager.isActive: registered, unfenced), and a dead one stays active until
    its session lapses (controller._live_replica); only a dead broker also fenced is (_unelectable_then). Seen on
    2026-11-27 (leader-power-loss, acks=1, load ~25): broker 1 powered off at 10 s and back at 28.6 s, broker 3
    elected at its fencing; samples at 24.8-28.6 s named the dead, fenced broker 1 leader again with its old ISR
    [1, 3, 2], a stale answer."""
    if getattr(model.config, "zookeeper_mode", False):
        return False
    down = False
    for x in model.events:
        if int(x["t_ns"]) > t:
            break
        action, _, effect = str(x.get("event", "")).partition(" ")
        if effect in DOWN_EFFECTS and action in ("start", "heal") and broker in (x.get("nodes") or ()):
            down = action == "start"
    return down


def _unelectable_then(replays: list, broker: int, t: int) -> bool:
    """The broker's process was down at t (down_then) and a replay had it fenced then: no election at t can have
    chosen it, so a sample naming it the new leader is a stale answer. A dead broker not yet fenced in any replay
    is electable (controller._live_replica: the controller counts it active until its session times out), so a
    sample naming it is compared like any other: seen on no replay, it is a `leader_mismatch`."""
    return down_then(replays[0], broker, t) and any(_fenced_then(r, broker, t) for r in replays)


def _fenced_then(replay, broker: int, t: int) -> bool:
    """Whether the replay had the broker fenced at t (its last `fenced` or `unfenced` event up to t)."""
    fenced = False
    for x in replay.events:
        if int(x["t_ns"]) > t:
            break
        if x.get("event") in ("fenced", "unfenced") and x.get("node") == broker:
            fenced = x["event"] == "fenced"
    return fenced


def _leader_is(x, broker: int) -> bool:
    return x is not None and not pd.isna(x) and int(x) == broker


def _partition(x: dict) -> int | None:
    return None if x.get("partition") is None else int(x["partition"])


def _first_samples(samples: pd.DataFrame) -> dict[int, dict]:
    """The first sample of each partition: the model's initial leader and ISR (state._initial_state)."""
    return {p: g.iloc[0].to_dict() for p, g in _partitions(samples)} if samples is not None and len(samples) else {}


def _preferred_move(e: dict) -> bool:
    """A leader moved while the old one stayed in the ISR: a preferred-leader election, no failover (module doc)."""
    return e.get("previous") is not None and e["previous"] in e.get("isr", ()) and e["how"] == "from the ISR" \
        and e["leader"] in e["previous_isr"]


def _model_state(events: list[dict], p: int, t: int, near: list, first: dict | None) -> dict:
    """What the recorded replay had for partition p just before its nearest election there (else at t): its
    leader, ISR, ELR and fenced brokers, read from its events. Before any ISR change it has the first sample's."""
    stop = min((x["t_ns"] for name, x in near if name == REPLAYS[0]), key=lambda s: abs(s - t), default=None)
    leader = None if first is None or pd.isna(first.get("leader")) else int(first["leader"])
    isr = sorted(_members(first.get("isr"))) if first is not None else []
    elr: list[int] = []
    fenced: set[int] = set()
    for x in events:
        at = int(x["t_ns"])
        if at > t and stop is None or stop is not None and (at > stop or at == stop and _is_election(x, p)):
            break
        kind = x.get("event")
        if kind in ("fenced", "unfenced"):
            (fenced.add if kind == "fenced" else fenced.discard)(int(x["node"]))
        elif _partition(x) != p:
            continue
        elif kind == "isr":
            isr, elr = list(x["isr"]), list(x.get("elr") or [])
        elif kind == "leader":
            leader = int(x["leader"])
            if x.get("how") != "from the ISR":           # controller._elect: an ELR or unclean leader alone in it
                isr, elr = [leader], [r for r in elr if r != leader] if x.get("how") == "from the ELR" else []
        elif kind == "offline":
            leader = None
    return {"leader": leader, "isr": isr, "elr": elr, "fenced": sorted(fenced)}


def _is_election(x: dict, p: int) -> bool:
    return x.get("event") == "leader" and _partition(x) == p


def _mismatch(e: dict, near: list, state: dict) -> dict:
    p, t, leader = e["partition"], e["t_ns"], e["leader"]
    chose: dict[tuple, list[str]] = {}                   # (t_ns, broker, how) -> the replays that elected so
    for name, x in near:
        if x.get("leader") is not None:
            chose.setdefault((int(x["t_ns"]), int(x["leader"]), x.get("how", "")), []).append(name)
    model_elected = [{"broker": b, "t_ns": at, "how": how, "replays": names}
                     for (at, b, how), names in sorted(chose.items())]
    said = "; ".join(f"broker {c['broker']} {c['how']} at {(c['t_ns'] - t) / 1e9:+.1f} s from it "
                     f"({' and '.join(c['replays'])} timing{'s' * (len(c['replays']) > 1)})" for c in model_elected)
    kept = "nobody" if state["leader"] is None else f"broker {state['leader']}"
    elected = f"the model's replays elected {said}" if said else \
        f"no replay of the model elected anyone within {TOLERANCE_NS / 1e9:g} s (it had {kept} leading)"
    previous = "nobody" if e["previous"] is None else f"broker {e['previous']}"
    return {"kind": "leader_mismatch", "partition": p, "t_ns": t, "cluster_leader": leader,
            "cluster_previous": e["previous"], "cluster_how": e["how"], "model_elected": model_elected,
            "model_leader": state["leader"], "candidates": {k: state[k] for k in ("isr", "elr", "fenced")},
            "detail": f"the cluster elected broker {leader} leader of partition {p} (after {previous}, {e['how']}); "
                      f"{elected}; the model's candidates: ISR {state['isr']}, ELR {state['elr']}, fenced "
                      f"{state['fenced']}"}


def planned_move_risk(samples: pd.DataFrame | None) -> list:
    """acks=1 risk windows around each preferred-leader election the samples show (module doc: the model does not
    replay them, as Kafka's controller schedules them itself). The move is clean, so acks=all writes are on the new
    leader, but an acks=1 write the old leader acknowledged and the new one had not yet fetched is truncated away
    when the old leader follows (KIP-101): the same acks=1 tail as any leader change, within a follower's fetch
    delay (REPLICATION_SLACK_NS) before the last sample that still showed the old leader, up to the first that
    showed the new one. Seen on 2026-11-27 (a cluster kept up across the pytest suite's runs, leader-isolate,
    acks=1): leadership of partition 0 went back from broker 2 to its preferred replica 1 at ~29 s, ISR [1, 2, 3]
    throughout, and 12 writes broker 2 acknowledged at 28.5-28.8 s were gone; judged violations until this."""
    if samples is None or not len(samples):
        return []
    out = []
    elected = [e for p, g in _partitions(samples) for e in _elections(p, _rows(g))]    # no high watermarks needed
    for e in elected:
        if not _preferred_move(e):
            continue
        p, t = e["partition"], e["t_ns"]
        before = samples[(samples["partition"] == p) & (samples["t_ns"] < t)]["t_ns"]
        start = int(before.max()) if len(before) else t
        out.append(Window(p, start - REPLICATION_SLACK_NS, t + TICK_NS, ("1",),
                          f"acks=1 tail of broker {e['previous']} when leadership moved to its preferred replica "
                          f"{e['leader']} (auto.leader.rebalance.enable), seen in the samples",
                          Cause(f"sample p{p} {t}", t, f"leadership of partition {p} moved from broker "
                                f"{e['previous']} to {e['leader']}")))
    return out
