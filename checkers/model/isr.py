"""An ISR replication model: which acked writes a run's faults could remove, and when partitions were unwritable.

Pure Python, no Spark. It replays the fault timeline (faults.parquet effects) on the state machine of
/work/shared/notes/isr-model.md at a fixed tick: brokers alive/paused/fenced, the controller quorum, per partition
leader, epoch, ISR and ELR, each broker's (possibly stale) view of the leader, and each replica's log as time
segments per leader epoch ("holds every write the epoch-e leader appended between t0 and t1"). Followers that can
fetch copy the leader's segments and truncate what diverges (KIP-101); an election picks from the ISR, then the
ELR where enabled, then uncleanly where enabled and honoured (KRaft: 3.9+). A kill keeps the page cache; a power
loss (effect `power_loss`, an extension) drops the last 30 s of unflushed data.

The output is time windows, not per-record state: a write acked at time t on partition p with acks a is `at_risk`
when t falls in a window for p and a (its epoch's segment around t did not survive into the final log, for a
reason the model names), else `guaranteed`. Offsets are not modelled; cluster samples seed the initial leaders,
replica order and ISRs, and their high watermarks map a truncation time to an offset.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from checkers.model.observed import intersect_windows
from history.reader import RunMeta, version_tuple

TICK_NS = 100_000_000
REPLICATION_SLACK_NS = 1_500_000_000    # a follower may trail by replica.fetch.wait.max.ms (500 ms), more on a busy box
METADATA_SLACK_NS = 1_000_000_000      # clients learn of a new leader on their next metadata refresh
# A broker that reconnects to the controller (after a partition heals or a pause ends) acts on its old metadata
# until it has fetched the metadata log's new records: a deposed leader stays a zombie that long, and requests
# the clients' TCP stacks retransmit reach it at once. Seen here: acks=1 writes acked 3 s after a heal, then lost.
METADATA_CATCHUP_NS = 5_000_000_000
DIRTY_EXPIRE_NS = 30_000_000_000          # vm.dirty_expire_centisecs: page cache older than this is on disk
IDEMPOTENCE_HORIZON_NS = 120_000_000_000   # the Java producer's delivery.timeout.ms: how long a write is retried
ACKED = ("1", "all")
CLIENT_DEFAULT_RETRIES = 2_147_483_647   # librdkafka's `retries` default; meta.json writes null for "client default"
CLIENT_DEFAULT_MAX_IN_FLIGHT = 1_000_000


def profile_int(profile: dict, key: str, default: int) -> int:
    """An integer setting of a meta.json producer profile; absent or null means the client's default."""
    value = profile.get(key)
    return default if value is None else int(value)


@dataclass(frozen=True)
class ModelConfig:
    """The configuration knobs that change the model's predictions."""

    kafka_version: str
    partitions: int
    replication_factor: int
    min_insync_replicas: int
    unclean_leader_election: bool = False
    elr_enabled: bool = False
    replica_lag_time_max_ms: int = 30_000
    broker_session_timeout_ms: int = 9_000
    acks: tuple[str, ...] = ("all",)
    producers: tuple[dict, ...] = ()
    idempotent: tuple[bool, ...] = ()
    brokers: tuple[int, ...] = ()       # broker ids, the possible replicas; default 1..replication_factor
    controllers: tuple[int, ...] = ()   # dedicated KRaft controllers, the only voters; empty: the brokers vote

    @classmethod
    def from_meta(cls, meta: RunMeta, acks: tuple[str, ...] = (), idempotent: tuple[bool, ...] = ()):
        acks = tuple(sorted(set(acks) or {str(p.get("acks") or "all") for p in meta.producers} or {"all"}))
        idem = tuple(sorted(set(idempotent) or {bool(p.get("idempotent")) for p in meta.producers}))
        return cls(kafka_version=meta.kafka_version, partitions=meta.partitions,
                   replication_factor=meta.replication_factor, min_insync_replicas=meta.min_insync_replicas,
                   unclean_leader_election=meta.unclean_leader_election, elr_enabled=meta.elr_enabled,
                   replica_lag_time_max_ms=meta.replica_lag_time_max_ms,
                   broker_session_timeout_ms=meta.broker_session_timeout_ms, acks=acks,
                   producers=tuple(meta.producers), idempotent=idem, brokers=tuple(meta.brokers),
                   controllers=tuple(meta.controllers))

    @property
    def unclean_honoured(self) -> bool:
        """KRaft ignores unclean.leader.election.enable before 3.9."""
        return self.unclean_leader_election and version_tuple(self.kafka_version) >= (3, 9)

    @property
    def effective_min_isr(self) -> int:
        return min(self.min_insync_replicas, self.replication_factor)

    def as_dict(self) -> dict:
        return {"kafka_version": self.kafka_version, "acks": list(self.acks),
                "min_insync_replicas": self.min_insync_replicas, "replication_factor": self.replication_factor,
                "elr_enabled": self.elr_enabled, "unclean_leader_election": self.unclean_leader_election,
                "unclean_honoured": self.unclean_honoured,
                "replica_lag_time_max_ms": self.replica_lag_time_max_ms,
                "broker_session_timeout_ms": self.broker_session_timeout_ms,
                "brokers": list(self.brokers), "controllers": list(self.controllers)}


@dataclass(frozen=True)
class FaultEvent:
    t_ns: int
    action: str                  # start | heal
    effect: str                  # kill | stop | pause | net | loss | latency | power_loss
    nodes: tuple[int, ...]
    drops: tuple[tuple, ...] = ()
    probability: float = 1.0
    fault: str = ""
    applied_ns: int | None = None   # a start row: when applying ended (the effect began in [t_ns, applied_ns])

    @classmethod
    def from_row(cls, t_ns, action, fault, nodes, details) -> "FaultEvent":
        d = json.loads(details) if isinstance(details, str) else dict(details or {})
        drops = tuple((_node(s), _node(t)) for s, t in d.get("drops", ()))
        applied = d.get("applied_ns")
        return cls(t_ns=int(t_ns), action=action, effect=str(d.get("effect", "")), fault=fault,
                   nodes=tuple(int(n) for n in nodes), drops=drops,
                   probability=float(d.get("probability", 1.0)), applied_ns=int(applied) if applied else None)


def worst_case_onsets(events: list[FaultEvent]) -> list[FaultEvent]:
    """A network cut goes on node by node over [t_ns, applied_ns]. The worst case for acknowledged writes is the
    replication paths cut first and the clients' last: so the cluster-side drops start at t_ns and the client-side
    ones only at applied_ns (a leader keeps acknowledging writes it can no longer replicate until then)."""
    out = []
    for e in events:
        client = tuple(d for d in e.drops if "client" in d)
        if e.action == "start" and e.effect == "net" and client and e.applied_ns and e.applied_ns > e.t_ns:
            rest = tuple(d for d in e.drops if "client" not in d)
            if rest:
                out.append(replace(e, drops=rest))
            out.append(replace(e, t_ns=e.applied_ns, drops=client))
        else:
            out.append(e)
    return sorted(out, key=lambda e: e.t_ns)


def _node(x):
    return x if x == "client" else int(x)


@dataclass(frozen=True)
class Window:
    """A time window of one partition: at risk for writes with `acks`, or unwritable with `acks`."""

    partition: int
    start_ns: int
    end_ns: int
    acks: tuple[str, ...]
    reason: str


@dataclass
class ModelResult:
    config: ModelConfig
    risk: list[Window]
    unavailable: list[Window]
    truncations: list[Window]          # loss events: the partition's log was cut back at start_ns
    events: list[dict]
    hw: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)   # partition -> (t, hw)
    # The same faults replayed with the other timing Kafka allows (see run_model): their risk is already merged
    # into `risk`; a certain prediction (min ISR breached, an unclean election seen) must hold in them too.
    alternatives: list["ModelResult"] = field(default_factory=list)
    shrink_slack_ns: int | None = None     # None: half of replica.lag.time.max.ms (the shrink's 1x-1.5x spread)

    def possible_events(self) -> list[dict]:
        """The events of every timing the model allows: what Kafka may have done."""
        return self.events + [e for alt in self.alternatives for e in alt.events]

    # -- per write -------------------------------------------------------------------------------------------
    def durability(self, partition, t_ack_ns, acks, t_invoke_ns=None) -> tuple[str, str]:
        """The write was appended and acked at some moment in [t_invoke_ns, t_ack_ns] (the history records when
        the client sent it and when its delivery report was handled, not when the broker appended it), so it is
        at risk when that interval meets a risk window."""
        if acks not in ACKED:
            return "at_risk", "acks=0: never acknowledged by a broker"
        t0 = t_ack_ns if t_invoke_ns is None else t_invoke_ns
        for w in self.risk:
            if w.partition == partition and acks in w.acks and t0 <= w.end_ns and w.start_ns <= t_ack_ns:
                return "at_risk", w.reason
        return "guaranteed", "no event the model allows removes it: it was on every ISR member the model " \
                             "let become leader afterwards"

    def classify(self, writes: pd.DataFrame) -> pd.DataFrame:
        """durability and reason for rows with partition, acks, t_invoke_ns and t_complete_ns: as durability(),
        a write is at risk when [t_invoke_ns, t_complete_ns] meets a risk window."""
        if not len(writes):
            return pd.DataFrame({"durability": pd.Series(dtype="string"), "reason": pd.Series(dtype="string")})
        t = writes["t_complete_ns"].fillna(writes["t_invoke_ns"]).astype("int64").to_numpy()
        t0 = writes["t_invoke_ns"].astype("int64").to_numpy() if "t_invoke_ns" in writes else t
        part = writes["partition"].fillna(-1).astype("int64").to_numpy()
        acks = writes["acks"].astype(object).to_numpy()
        durability = np.where(np.isin(acks, ACKED), "guaranteed", "at_risk").astype(object)
        reason = np.where(durability == "guaranteed", self.durability(-1, -1, "all")[1],
                          "acks=0: never acknowledged by a broker").astype(object)
        for w in reversed(self.risk):   # the first matching window wins, as in durability()
            hit = (part == w.partition) & (t >= w.start_ns) & (t0 <= w.end_ns) & np.isin(acks, w.acks)
            durability[hit] = "at_risk"
            reason[hit] = w.reason
        return pd.DataFrame({"durability": durability, "reason": reason}, index=writes.index)

    # -- loss events and availability ----------------------------------------------------------------------
    def explaining_truncation(self, partition, offset) -> Window | None:
        """A truncation of `partition` that could have rewritten `offset` (at or above the HW at the cut)."""
        for w in self.truncations:
            if partition is None or pd.isna(partition) or w.partition == partition:
                floor = self._hw_at(w.partition, w.start_ns)
                if offset is None or pd.isna(offset) or floor is None or offset >= floor - 1:
                    return w
        return None

    def _hw_at(self, partition, t_ns) -> int | None:
        if partition not in self.hw:
            return None
        ts, hws = self.hw[partition]
        i = np.searchsorted(ts, t_ns, side="right") - 1
        valid = hws[: max(i, 0) + 1]
        valid = valid[valid >= 0]
        return int(valid.min()) if i >= 0 and len(valid) else None

    # -- what the judge asks (checkers.verdict) ----------------------------------------------------------------
    def _loss_events(self, partition) -> list[tuple[int, str]]:
        """(time, description) of the predicted events that can remove committed records on `partition`: unclean
        elections (PartitionChangeBuilder's unclean path elects a replica outside the ISR, which truncates others
        to its log) and power losses (the unflushed tail of every replica is gone)."""
        out = []
        for e in self.possible_events():
            if e.get("partition") != partition:
                continue
            if e.get("event") == "leader" and e.get("how") == "uncleanly":
                out.append((int(e["t_ns"]), f"the predicted unclean election of broker {e.get('leader')} "
                                            f"(epoch {e.get('epoch')})"))
            elif str(e.get("event", "")).startswith("power loss"):
                out.append((int(e["t_ns"]), f"the predicted power loss of broker {e.get('node')}"))
        return out

    def committed_loss_cause(self, partition, t_read_ns, t_ack_ns=None, t_invoke_ns=None) -> str | None:
        """Why a committed record (read by a consumer at t_read_ns, appended no later than that) may be gone: a
        risk window of an unclean election or a power loss on its partition that covers its append time, i.e.
        the elected replica lacked the segment it was in. None: Kafka's rules keep it."""
        t_hi = min(t for t in (t_read_ns, t_ack_ns) if t is not None)
        t_lo = t_invoke_ns if t_invoke_ns is not None else t_hi - REPLICATION_SLACK_NS
        for w in self.risk:
            if w.partition == partition and ("unclean" in w.reason or "power loss" in w.reason) \
                    and w.start_ns <= t_hi and t_lo <= w.end_ns:
                return w.reason
        return None

    def idempotence_voided(self, partition, t_ns) -> str | None:
        """An unclean election or power loss on the partition after the write was invoked (less a delivery timeout,
        within which it may still have been retried) wipes the producer state the leader dedups against."""
        for te, what in self._loss_events(partition):
            if te >= t_ns - IDEMPOTENCE_HORIZON_NS:
                return what
        return None

    def rewrite_cause(self, partition, offset, t_read_ns) -> str | None:
        """A read (committed) position can hold another value later only after an unclean election or a power loss
        on its partition following the first read (less the model's timing slack)."""
        for te, what in self._loss_events(partition):
            if t_read_ns is None or te >= t_read_ns - REPLICATION_SLACK_NS:
                return what
        return None

    def min_isr_windows(self) -> list[tuple[int, int, int]]:
        """(partition, start, end) in which the model is certain the ISR was below min.insync.replicas, so that
        Partition.appendRecordsToLeader rejects acks=all with NOT_ENOUGH_REPLICAS (and with ELR, KIP-966, the
        high watermark cannot advance). Kafka shrinks the ISR between 1x and 1.5x replica.lag.time.max.ms after a
        follower stops (ReplicaManager's isr-expiration task runs every lag/2): the certain part begins half a lag
        time after the model's shrink, and ends a slack before the model's expansion; and it must hold in every
        alternative timing too."""
        out = self._own_min_isr_windows()
        for alt in self.alternatives:
            out = intersect_windows(out, alt.min_isr_windows())
        return out

    def _own_min_isr_windows(self) -> list[tuple[int, int, int]]:
        out = []
        need = self.config.effective_min_isr
        spread = self.config.replica_lag_time_max_ms * 1_000_000 // 2 if self.shrink_slack_ns is None \
            else self.shrink_slack_ns
        late = spread + REPLICATION_SLACK_NS
        current: dict[int, int] = {}
        for e in sorted((e for e in self.events if e.get("event") == "isr"), key=lambda e: e["t_ns"]):
            p, t, size = int(e["partition"]), int(e["t_ns"]), len(e.get("isr") or ())
            if size < need and p not in current:
                current[p] = t + late
            elif size >= need and p in current:
                start = current.pop(p)
                if t - REPLICATION_SLACK_NS > start:
                    out.append((p, start, t - REPLICATION_SLACK_NS))
        for p, start in current.items():
            out.append((p, start, 2 ** 62))
        return sorted(out)

    def unwritable(self, partition, t0, t1, acks) -> bool:
        for w in self.unavailable:
            if (partition is None or pd.isna(partition) or w.partition == partition) and acks in w.acks \
                    and w.start_ns <= t1 and t0 <= w.end_ns:
                return True
        return False

    def predictions(self) -> dict:
        used = set(self.config.acks) & set(ACKED)
        relevant = [w for w in self.risk if used & set(w.acks)]
        long = [w for w in relevant if w.end_ns - w.start_ns > 4 * REPLICATION_SLACK_NS]
        lost = "never" if not relevant else "expected" if long or any(
            "unclean" in w.reason or "power loss" in w.reason for w in relevant) else "possible"
        non_idem = [p for p in self.config.producers if not p.get("idempotent", False)] or \
            ([{}] if False in self.config.idempotent else [])
        dup = any(profile_int(p, "retries", CLIENT_DEFAULT_RETRIES) > 0 for p in non_idem)
        reorder = any(profile_int(p, "max_in_flight", CLIENT_DEFAULT_MAX_IN_FLIGHT) > 1 for p in non_idem) or any(
            profile_int(p, "max_in_flight", 5) > 5 for p in self.config.producers if p.get("idempotent", False))
        return {"lost": lost, "duplicates": "possible" if dup else "never",
                "reordering": "possible" if reorder else "never",
                "unavailable_windows": [[w.start_ns, w.end_ns, w.partition] for w in self.unavailable]}


# ---------------------------------------------------------------------------------------------------------------
# The simulation

@dataclass
class _Partition:
    replicas: list[int]
    leader: int | None
    isr: list[int]
    epoch: int = 0
    elr: list[int] = field(default_factory=list)
    last_known: int | None = None                     # ELR on: the leader when the partition went leaderless
    logs: dict = field(default_factory=dict)          # broker -> [[epoch, t0, t1], ...]
    appended: list = field(default_factory=list)      # every segment any leader (or zombie) ever appended
    caught_up: dict = field(default_factory=dict)     # follower -> last time it was caught up
    view: dict = field(default_factory=dict)          # broker -> (leader, epoch, isr) it believes
    epoch_reason: dict = field(default_factory=dict)  # epoch -> how its leader was chosen
    elections: list = field(default_factory=list)     # (epoch, t, how, leader, the leader's log when elected)
    down_since: dict = field(default_factory=dict)    # "no_leader"/"under_min_isr" -> start time


class _Sim:
    def __init__(self, cfg: ModelConfig, faults: list[FaultEvent], samples: pd.DataFrame, t_begin: int, t_end: int,
                 leader_fenced_first: bool = False):
        self.cfg, self.t_end, self.leader_fenced_first = cfg, t_end, leader_fenced_first
        self.faults = sorted(faults, key=lambda f: f.t_ns)
        self.events: list[dict] = []
        self.truncs: list[Window] = []
        self.risk: list[Window] = []
        self.unavailable: list[Window] = []
        self.nodes, self.parts = self._initial_state(samples, t_begin)      # the brokers
        self.voters = sorted(cfg.controllers) or self.nodes                   # the KRaft quorum
        everyone = set(self.nodes) | set(self.voters)
        self.alive = {n: True for n in everyone}
        self.paused = {n: False for n in everyone}
        self.fenced = {n: False for n in self.nodes}
        self.unclean_restart = {n: False for n in self.nodes}
        self.last_hb = {n: t_begin for n in self.nodes}
        self.drops: dict[int, set] = {}          # fault index -> set of (src, dst)
        self.controller: int | None = min(self.voters)
        self.power_losses: list[tuple[int, int]] = []     # (t, broker)
        self.connected_since: dict[int, int | None] = {n: t_begin - METADATA_CATCHUP_NS for n in self.nodes}

    def _initial_state(self, samples: pd.DataFrame, t0: int):
        cfg = self.cfg
        nodes = set(cfg.brokers or range(1, cfg.replication_factor + 1))
        if not cfg.brokers:
            for f in self.faults:
                nodes |= set(f.nodes) - set(cfg.controllers)
        parts = {}
        for p in range(cfg.partitions):
            rows = samples[samples["partition"] == p].sort_values("t_ns") if len(samples) else samples
            if len(rows):
                first = rows.iloc[0]
                isr = [int(x) for x in first["isr"]]
                seen = [int(x) for r in rows["isr"] for x in r]
                leader = None if pd.isna(first["leader"]) else int(first["leader"])
                replicas = list(dict.fromkeys(([leader] if leader is not None else []) + isr + seen))
            else:
                ordered = sorted(nodes)
                k = p % len(ordered)
                replicas = (ordered[k:] + ordered[:k])[:cfg.replication_factor]
                leader, isr = replicas[0], list(replicas)
            nodes |= set(replicas)
            part = _Partition(replicas=replicas, leader=leader, isr=isr)
            part.logs = {r: [[0, t0, t0]] for r in replicas}
            part.caught_up = {r: t0 for r in replicas}
            part.view = {r: (leader, 0, tuple(isr)) for r in replicas}
            part.epoch_reason = {0: "initial leader"}
            parts[p] = part
        return sorted(nodes), parts

    # -- connectivity ----------------------------------------------------------------------------------------
    def up(self, n) -> bool:
        return n == "client" or (self.alive.get(n, False) and not self.paused.get(n, False))

    def can(self, src, dst) -> bool:
        return self.up(src) and self.up(dst) and all((src, dst) not in d for d in self.drops.values())

    def link(self, a, b) -> bool:
        return a == b and self.up(a) or (self.can(a, b) and self.can(b, a))

    def _elect_controller(self):
        def quorum(c):
            return self.up(c) and sum(self.link(c, v) for v in self.voters) > len(self.voters) / 2
        if self.controller is None or not quorum(self.controller):
            self.controller = next((c for c in self.voters if quorum(c)), None)

    def reaches_controller(self, n) -> bool:
        return self.controller is not None and self.link(n, self.controller)

    # -- fault effects ---------------------------------------------------------------------------------------
    def apply(self, i: int, f: FaultEvent, t: int):
        start = f.action == "start"
        self.events.append({"t_ns": t, "event": f"{f.action} {f.effect}", "nodes": list(f.nodes)})
        if f.effect in ("kill", "power_loss", "stop") and start:
            for part in self.parts.values():      # a new process believes nothing until it reads the metadata log
                for n in f.nodes:
                    if n in part.view:
                        part.view[n] = (None, -1, ())
        if f.effect in ("kill", "power_loss"):
            for n in f.nodes:
                self.alive[n] = not start
                if start:
                    self.unclean_restart[n] = True
                    if f.effect == "power_loss":
                        self._lose_unflushed(n, t)
        elif f.effect == "stop":
            for n in f.nodes:
                self.alive[n] = not start
                if start:
                    self._controlled_shutdown(n, t)
                else:
                    self.unclean_restart[n] = False
        elif f.effect == "pause":
            for n in f.nodes:
                self.paused[n] = start
        elif f.effect in ("net", "loss"):
            if start and (f.effect == "net" or f.probability >= 0.5):
                self.drops[i] = set(f.drops)
            elif not start:
                self._heal_drops(f)

    def _heal_drops(self, f: FaultEvent):
        """Undo the start rows this heal row closes (one, or the parts worst_case_onsets split it into)."""
        healed = set(f.drops)
        for k in sorted(self.drops):
            s = self.faults[k]
            if s.fault == f.fault and s.nodes == f.nodes and set(s.drops) <= healed and healed:
                del self.drops[k]
                healed -= set(s.drops)

    def _lose_unflushed(self, n, t):
        keep = t - DIRTY_EXPIRE_NS
        for p, part in self.parts.items():
            if n in part.logs:
                part.logs[n] = _cut(part.logs[n], keep)
                self.events.append({"t_ns": t, "event": "power loss: unflushed tail dropped", "node": n,
                                    "partition": p})
        self.power_losses.append((t, n))

    def _controlled_shutdown(self, n, t):
        self.fenced[n] = True
        for p, part in self.parts.items():
            if n in part.isr:
                new = [r for r in part.isr if r != n]
                self._set_isr(part, new if new or self.cfg.elr_enabled else part.isr, list(part.isr), t, p)
            if part.leader == n and self.controller is not None:
                self._elect(p, part, t, exclude=n)

    # -- controller --------------------------------------------------------------------------------------------
    def _fence(self, expired: list[int], t):
        """Fence every broker whose session expired in this tick. The controller fences one stale broker at a
        time, the one whose last heartbeat is oldest (ReplicationControlManager.maybeFenceOneStaleBroker,
        BrokerHeartbeatManager.findOneStaleBroker); for sessions that lapse together (e.g. all heartbeats to an
        isolated controller) that order is a matter of milliseconds the model cannot know, and it decides which
        replica is left as the last ISR member. The recorded timing fences by broker id, the late one each
        partition's leader first. None of them may be elected meanwhile: all are marked fenced first."""
        for n in expired:
            self.fenced[n] = True
            self.events.append({"t_ns": t, "event": "fenced", "node": n})
        for p, part in self.parts.items():
            order = sorted(expired, key=lambda n: n != part.leader) if self.leader_fenced_first else expired
            for n in order:
                self._fence_replica(p, part, n, t)

    def _fence_replica(self, p: int, part: _Partition, n: int, t: int):
        if n in part.isr:
            old = list(part.isr)
            new = [r for r in part.isr if r != n]
            if not new and not self.cfg.elr_enabled:
                new = old                          # last replica standing keeps its ISR membership
            self._set_isr(part, new, old, t, p)
        if part.leader == n:
            self._elect(p, part, t)

    def _set_isr(self, part: _Partition, new: list[int], old: list[int], t: int, p: int):
        """ELR upkeep as PartitionChangeBuilder.maybePopulateTargetElr (4.1+): at or above min ISR the ELR is
        empty; below it the ELR is (ELR + ISR) - new ISR - replicas that re-registered after an unclean shutdown.
        A broker merely fenced (killed, not yet back) stays in the ELR: ReplicationControlManager removes it only
        in handleBrokerUncleanShutdown, when it registers again (see tick)."""
        if self.cfg.elr_enabled:
            if len(new) >= self.cfg.effective_min_isr:
                part.elr = []
            else:
                part.elr = [r for r in dict.fromkeys(part.elr + old) if r not in new]
        if new != part.isr:
            self.events.append({"t_ns": t, "event": "isr", "partition": p, "isr": new, "elr": part.elr})
        part.isr = new

    def _elect(self, p: int, part: _Partition, t: int, exclude=None):
        ok = [r for r in part.replicas if not self.fenced[r] and r != exclude and self.alive[r]]
        leader, how = next(((r, "from the ISR") for r in part.replicas if r in part.isr and r in ok), (None, ""))
        if leader is None and self.cfg.elr_enabled:
            leader, how = next(((r, "from the ELR") for r in part.replicas if r in part.elr and r in ok),
                               (None, ""))
            if leader is not None:
                part.elr = [r for r in part.elr if r != leader]
                part.isr = [leader]
        if leader is None and self.cfg.elr_enabled and not part.isr and not part.elr and part.last_known in ok:
            # PartitionChangeBuilder.canElectLastKnownLeader (4.0+; its liveness test fixed in 4.1, KAFKA-19522):
            # ISR and ELR empty, the last known leader is back: it is elected alone. It held everything committed.
            leader, how = part.last_known, "as the last known leader (ISR and ELR empty)"
            part.isr = [leader]
        if leader is None and self.cfg.unclean_honoured and ok:
            leader, how = ok[0], "uncleanly"
            part.isr, part.elr = [leader], []
        old_leader = part.leader
        part.leader = leader
        if leader is None:
            if old_leader is not None:
                if self.cfg.elr_enabled:
                    part.last_known = old_leader
                self.events.append({"t_ns": t, "event": "offline", "partition": p})
            return
        part.epoch += 1
        part.epoch_reason[part.epoch] = f"{how} (broker {leader}, epoch {part.epoch})"
        part.elections.append((part.epoch, t, how, leader, [list(s) for s in part.logs[leader]]))
        part.logs[leader].append([part.epoch, t, t])
        part.caught_up = {r: t for r in part.isr}
        self.events.append({"t_ns": t, "event": "leader", "partition": p, "leader": leader, "epoch": part.epoch,
                            "how": how})

    # -- one tick ----------------------------------------------------------------------------------------------
    def tick(self, t: int):
        cfg = self.cfg
        self._elect_controller()
        for n in self.nodes:
            connected = self.up(n) and self.reaches_controller(n)
            if not connected:
                self.connected_since[n] = None
            elif self.connected_since.get(n) is None:
                self.connected_since[n] = t
        for n in self.nodes:
            if self.up(n) and self.reaches_controller(n):
                self.last_hb[n] = t
                if self.fenced[n] and self.alive[n]:
                    self.fenced[n] = False
                    self.events.append({"t_ns": t, "event": "unfenced", "node": n})
                    if self.unclean_restart[n] and cfg.elr_enabled:
                        for part in self.parts.values():
                            part.elr = [r for r in part.elr if r != n]
                    self.unclean_restart[n] = False
        if self.controller is not None:
            expired = [n for n in self.nodes
                       if not self.fenced[n] and t - self.last_hb[n] > cfg.broker_session_timeout_ms * 1_000_000]
            if expired:
                self._fence(expired, t)
            for p, part in self.parts.items():
                if part.leader is None or self.fenced[part.leader]:
                    self._elect(p, part, t)
        for p, part in self.parts.items():
            self._tick_partition(p, part, t)

    def _tick_partition(self, p: int, part: _Partition, t: int):
        cfg = self.cfg
        for n in part.replicas:
            since = self.connected_since.get(n)
            if since is not None and t - since >= METADATA_CATCHUP_NS:
                part.view[n] = (part.leader, part.epoch, tuple(part.isr))
        # appends: every broker that believes it leads and that the client reaches (a zombie too)
        for n in part.replicas:
            leader, epoch, local_isr = part.view[n]
            if leader == n and self.up(n) and self.can("client", n) and self.can(n, "client"):
                for log in (part.logs[n], part.appended):
                    if log and log[-1][0] == epoch and log[-1][2] >= t - TICK_NS:
                        log[-1][2] = t
                    else:
                        log.append([epoch, t, t])
                if epoch < part.epoch:
                    # A zombie completes acks=all only with its whole local ISR fetching from it, i.e. alone in its
                    # ISR view, and only if that view meets min.insync.replicas: Partition.appendRecordsToLeader
                    # rejects acks=all with NOT_ENOUGH_REPLICAS before appending when the ISR is smaller.
                    alone = len(local_isr) <= 1 and self.cfg.effective_min_isr <= 1
                    self.risk.append(Window(p, t - TICK_NS, t, ("1", "all") if alone else ("1",),
                                            f"zombie leader {n} (epoch {epoch}) cut off from the controller "
                                            f"still acknowledged writes after a new leader was elected"))
        # follower fetch and truncation
        leader = part.leader
        fetched = set()
        if leader is not None and self.up(leader) and part.view[leader][:2] == (leader, part.epoch):
            for f in part.replicas:
                if f == leader or not self.up(f) or part.view[f][:2] != (leader, part.epoch):
                    continue
                if self.link(f, leader):
                    part.logs[f] = [list(s) for s in part.logs[leader]]
                    part.caught_up[f] = t
                    fetched.add(f)
            # ISR shrink and expand go through the controller (AlterPartition)
            if self.reaches_controller(leader):
                lag = cfg.replica_lag_time_max_ms * 1_000_000
                out = [f for f in part.isr if f != leader and t - part.caught_up.get(f, t) > lag]
                if out:
                    self._set_isr(part, [r for r in part.isr if r not in out], list(part.isr), t, p)
                back = [f for f in fetched if f not in part.isr and not self.fenced[f]]
                if back:
                    self._set_isr(part, part.isr + back, list(part.isr), t, p)
                    part.elr = [r for r in part.elr if r not in back]
        self._track_availability(p, part, t, fetched)

    def _track_availability(self, p: int, part: _Partition, t: int, fetched: set):
        leader = part.leader
        writable = leader is not None and self.up(leader) and part.view[leader][:2] == (leader, part.epoch) \
            and self.can("client", leader)
        hw_moves = writable and len(part.isr) >= self.cfg.effective_min_isr and \
            all(r == leader or r in fetched for r in part.isr)
        for key, ok, acks, reason in (
                ("no_leader", writable, ("0", "1", "all"), "no reachable leader"),
                ("under_min_isr", hw_moves or not writable, ("all",),
                 "acks=all cannot complete: ISR below min.insync.replicas or an ISR member not fetching")):
            if not ok and key not in part.down_since:
                part.down_since[key] = t
            elif ok and key in part.down_since:
                self.unavailable.append(Window(p, part.down_since.pop(key), t + METADATA_SLACK_NS, acks, reason))

    def advance_steady(self, t: int, t_new: int):
        """Skip quiet time: whatever was current at t (appending, fetching, heartbeating) lasts until t_new."""
        for n in self.nodes:
            if self.last_hb[n] == t:
                self.last_hb[n] = t_new
        for part in self.parts.values():
            for log in list(part.logs.values()) + [part.appended]:
                if log and log[-1][2] == t:
                    log[-1][2] = t_new
            for f, seen in part.caught_up.items():
                if seen == t:
                    part.caught_up[f] = t_new

    def finish(self, t: int):
        for p, part in self.parts.items():
            for key, start in part.down_since.items():
                acks = ("0", "1", "all") if key == "no_leader" else ("all",)
                self.unavailable.append(Window(p, start, t, acks, "no reachable leader" if key == "no_leader"
                                               else "acks=all cannot complete"))
            part.down_since = {}
            # What every epoch appended, minus what the final log kept, is what the run may have lost.
            final = part.logs.get(part.leader) if part.leader is not None else None
            if final is None:
                final = max(part.logs.values(), key=lambda lg: (lg[-1][0], lg[-1][2]) if lg else (-1, -1))
            appended = _union([seg for lg in part.logs.values() for seg in lg] + part.appended)
            for epoch, t0, t1 in _minus(appended, final):
                self._add_risk(p, part, epoch, t0, t1)
            # Whatever the next leader had fetched, the last few hundred ms an old leader acked with acks=1
            # may not have reached it.
            for epoch, _, t1 in appended:
                if epoch < part.epoch:
                    self.risk.append(Window(p, t1 - REPLICATION_SLACK_NS, self._applying_until(t1) + TICK_NS, ("1",),
                                            f"acks=1 tail of epoch {epoch}: the last fetch before its leader "
                                            f"lost leadership may have missed it"))
        self.risk = _merge(self.risk)
        self.truncs = _merge(self.truncs)
        self.unavailable.sort(key=lambda w: (w.start_ns, w.partition))

    def _applying_until(self, t: int) -> int:
        """A process fault (kill, stop, pause) takes effect somewhere in [t_ns, applied_ns]: a controlled shutdown
        in particular moves leadership seconds after it began, and the old leader acks acks=1 writes until then.
        The model ends an epoch at t_ns; a write acked up to applied_ns may be that epoch's lost tail."""
        end = t
        for f in self.faults:
            if f.action == "start" and f.effect in ("kill", "stop", "pause", "power_loss") and f.applied_ns \
                    and f.t_ns - TICK_NS <= t <= f.applied_ns + TICK_NS:
                end = max(end, f.applied_ns)
        return end

    def _add_risk(self, p, part, epoch, t0, t1):
        """Blame a lost piece of epoch `epoch`'s log on the first later election whose leader lacked it: the
        new leader's log is the truth every other replica truncates to (the leader epoch cache and
        OffsetsForLeaderEpoch, KIP-101/KIP-279), so that election is where the piece left the partition. Which
        acks it can hold follows from how that leader was chosen (PartitionChangeBuilder.electLeader): from the
        ISR or ELR it held every acks=all write, so only an acks=1 tail is gone; elected outside them (unclean)
        or after a power loss cut its own unflushed tail, acks=all writes may be gone too."""
        pieces = [[epoch, t0, t1]]
        for e, t_el, how, leader, snapshot in part.elections:
            if e <= epoch or not pieces:
                continue
            lacking = _minus(pieces, snapshot)
            for _, a, b in lacking:
                self._blame(p, epoch, a, b, t_el, f"{how} (broker {leader}, epoch {e})", how == "uncleanly")
            pieces = _minus(pieces, [[epoch, a, b] for _, a, b in lacking]) if lacking else pieces
        for _, a, b in pieces:          # held by every leader yet gone: cut by a power loss, or a tail
            self._blame(p, epoch, a, b, self.t_end, part.epoch_reason.get(epoch + 1, "later"), False)

    def _blame(self, p: int, epoch: int, a: int, b: int, t_el: int, chosen: str, unclean: bool):
        power = [n for t, n in self.power_losses
                 if a - REPLICATION_SLACK_NS <= t <= min(t_el, b + DIRTY_EXPIRE_NS + REPLICATION_SLACK_NS)]
        if unclean:
            reason, acks = f"unclean election: {chosen} lacked writes of epoch {epoch}", ACKED
        elif power:
            reason, acks = f"power loss of broker {power[0]}: its unflushed writes of epoch {epoch} were gone", ACKED
        else:
            reason = (f"acks=1 tail of epoch {epoch} not yet replicated when its leader was cut off; the next "
                      f"leader was chosen {chosen}")
            acks = ("1",)
        self.risk.append(Window(p, a - REPLICATION_SLACK_NS, b + TICK_NS, acks, reason))
        self.truncs.append(Window(p, a, b, acks, reason))


def _cut(log: list, keep_until: int) -> list:
    out = []
    for e, t0, t1 in log:
        if t0 <= keep_until:
            out.append([e, t0, min(t1, keep_until)])
    return out


def _union(segments) -> list:
    by_epoch: dict[int, list] = {}
    for e, t0, t1 in segments:
        by_epoch.setdefault(e, []).append([t0, t1])
    out = []
    for e, spans in by_epoch.items():
        spans.sort()
        cur = list(spans[0])
        for a, b in spans[1:]:
            if a <= cur[1] + TICK_NS:
                cur[1] = max(cur[1], b)
            else:
                out.append([e, cur[0], cur[1]])
                cur = [a, b]
        out.append([e, cur[0], cur[1]])
    return out


def _minus(log: list, truth: list) -> list:
    """Parts of `log` (epoch segments) that `truth` does not hold, ignoring gaps shorter than a tick."""
    out = []
    for e, t0, t1 in log:
        cur = t0
        for a, b in sorted((a, b) for te, a, b in truth if te == e and b >= t0 and a <= t1):
            if a > cur + TICK_NS:
                out.append([e, cur, a])
            cur = max(cur, b)
        if t1 > cur + TICK_NS:
            out.append([e, cur, t1])
    return out


def _merge(windows: list[Window]) -> list[Window]:
    """Join windows of one partition, acks and reason that touch or overlap."""
    out: list[Window] = []
    for w in sorted(windows, key=lambda w: (w.partition, w.acks, w.reason, w.start_ns)):
        last = out[-1] if out else None
        if last and (last.partition, last.acks, last.reason) == (w.partition, w.acks, w.reason) \
                and w.start_ns <= last.end_ns + TICK_NS:
            out[-1] = Window(w.partition, last.start_ns, max(last.end_ns, w.end_ns), w.acks, w.reason)
        else:
            out.append(w)
    return sorted(out, key=lambda w: (w.start_ns, w.partition))


# ---------------------------------------------------------------------------------------------------------------

def run_model(cfg: ModelConfig, faults: pd.DataFrame | list[FaultEvent] | None = None,
              samples: pd.DataFrame | None = None, t_begin: int | None = None, t_end: int | None = None
              ) -> ModelResult:
    """Replay the faults on the replication state machine and return its predictions.

    Two timings are replayed, both within what Kafka allows, and the judgement takes whichever does not invent a
    violation: as recorded (each fault at the start of its row, the ISR shrinking at replica.lag.time.max.ms),
    and late (each fault once applying it ended, `applied_ns`, and the ISR shrinking at 1.5x the lag time, the
    latest ReplicaManager.maybeShrinkIsr, scheduled every lag/2, gets to it; brokers whose sessions lapse
    together fenced leader first, see _Sim._fence). Risk is the union of both;
    a certain prediction must hold in both."""
    if isinstance(faults, pd.DataFrame):
        events = [FaultEvent.from_row(*r) for r in faults[["t_ns", "action", "fault", "nodes", "details"]]
                  .itertuples(index=False)]
    else:
        events = list(faults or [])
    samples = samples if samples is not None else pd.DataFrame(columns=["t_ns", "partition", "leader", "isr"])
    times = [e.t_ns for e in events] + [int(x) for x in samples["t_ns"]][:1] + [int(x) for x in samples["t_ns"]][-1:]
    t_begin = t_begin if t_begin is not None else (min(times) if times else 0)
    t_end = t_end if t_end is not None else (max(times) if times else t_begin)
    hw = {}
    if len(samples) and "high_watermark" in samples.columns:
        for p, g in samples.sort_values("t_ns").groupby("partition"):
            hw[int(p)] = (g["t_ns"].to_numpy(dtype=np.int64),
                          g["high_watermark"].astype("Int64").fillna(-1).to_numpy(dtype=np.int64))
    if not events:
        return ModelResult(cfg, [], [], [], [], hw)
    recorded = _simulate(cfg, worst_case_onsets(events), samples, t_begin, t_end)
    slow = replace(cfg, replica_lag_time_max_ms=cfg.replica_lag_time_max_ms * 3 // 2)
    late = _simulate(slow, [replace(e, t_ns=e.applied_ns) if e.applied_ns else e for e in events],
                     samples, t_begin, t_end, leader_fenced_first=True)
    late_result = ModelResult(slow, late.risk, late.unavailable, late.truncs, late.events, hw, shrink_slack_ns=0)
    unavailable = sorted(_merge(recorded.unavailable + late.unavailable), key=lambda w: (w.start_ns, w.partition))
    return ModelResult(cfg, _merge(recorded.risk + late.risk), unavailable, _merge(recorded.truncs + late.truncs),
                       recorded.events, hw, alternatives=[late_result])


def _simulate(cfg: ModelConfig, events: list[FaultEvent], samples: pd.DataFrame, t_begin: int, t_end: int,
              leader_fenced_first: bool = False) -> "_Sim":
    events = sorted(events, key=lambda e: e.t_ns)
    sim = _Sim(cfg, events, samples, t_begin, t_end, leader_fenced_first)
    settle = 2 * cfg.replica_lag_time_max_ms * 1_000_000 + 2 * cfg.broker_session_timeout_ms * 1_000_000
    t = min(t_begin, events[0].t_ns) - TICK_NS
    queue = list(enumerate(sim.faults))
    qi = 0
    stop = max(t_end, events[-1].t_ns + TICK_NS)
    quiet_since = None
    while t <= stop:
        while qi < len(queue) and queue[qi][1].t_ns <= t:
            sim.apply(queue[qi][0], queue[qi][1], t)
            qi += 1
        sim.tick(t)
        active = _active_faults(sim.faults[:qi])
        quiet_since = (quiet_since or t) if not active else None
        if quiet_since is not None and t - quiet_since > settle and qi < len(queue):
            sim.advance_steady(t, max(t, queue[qi][1].t_ns - TICK_NS))   # steady state: skip to the next fault
            t = max(t, queue[qi][1].t_ns - TICK_NS)
            quiet_since = None
        elif quiet_since is not None and t - quiet_since > settle:
            break                                        # nothing left to happen
        t += TICK_NS
    sim.finish(min(t, stop))
    return sim


def _active_faults(applied: list[FaultEvent]) -> bool:
    open_ = 0
    for f in applied:
        open_ += 1 if f.action == "start" else -1
    return open_ > 0
