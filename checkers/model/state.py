"""The state the model replays faults on: brokers alive, paused, fenced; the links between them; and per partition
its replicas, leader, epoch, ISR, ELR, each broker's (possibly stale) view, and each replica's log as segments."""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from kafka_chaos.checkers.model.config import METADATA_CATCHUP_NS, RESTART_UNFENCE_NS, TICK_NS, FaultEffect, ModelConfig
from kafka_chaos.checkers.model.observed import members_key
from kafka_chaos.checkers.model.windows import Window

FENCE_NEAR_NS = 10_000_000_000     # a logged fencing this close to the model's is the same one


@dataclass(frozen=True)
class Timing:
    """How long brokers take to become usable again, in one replay. `unfences`: the controller's real unfence
    times per broker (history/controller_log.py), which every replay takes when the run has them."""

    catchup_ns: int = METADATA_CATCHUP_NS     # a reconnected broker acts on the metadata log's news after this
    restart_unfence_ns: int = 0               # a restarted broker is unfenced no sooner than this after it started
    unfences: tuple = ()                      # ((broker, (t_ns, ...)), ...): observed unfence grants
    fences: tuple = ()                        # ((broker, (t_ns, ...)), ...): the controller's logged fencings
    stuck_fetchers: bool = False              # a healed follower waits on its cut fetch (_Sim._stuck_fetchers)

    def fence_order(self, expired: list[int], t: int) -> list[int] | None:
        """The order the controller fenced `expired` in, from its log (each broker's logged fencing nearest t, within
        FENCE_NEAR_NS), or None when the log does not say for every one of them."""
        near = {}
        for n in expired:
            times = [f for f in dict(self.fences).get(n, ()) if abs(f - t) <= FENCE_NEAR_NS]
            if not times:
                return None
            near[n] = min(times, key=lambda f: abs(f - t))
        return sorted(expired, key=lambda n: (near[n], n))

    def ready_after(self, n: int, t: int, thawed: bool = False, down_since: int | None = None) -> int:
        """When broker n, started (or thawed) at t, may be unfenced. A thawed broker kept its registration, so the
        controller unfences it at its next heartbeat; a restarted one once it has started up (RESTART_UNFENCE_NS).
        The controller's first unfence grant after t, when the logs have one, is the fact (for a thaw only within
        that bound: a broker whose session never lapsed was never fenced, and no grant follows its thaw). A grant
        counts from when the broker went down (`down_since`): the heal row is written once the undo has finished,
        which for a restart may include a wait for the broker to register, so the grant may come before it."""
        since = t - TICK_NS if down_since is None else min(down_since, t - TICK_NS)
        grants = [u for u in dict(self.unfences).get(n, ()) if u >= since]
        if grants and (not thawed or grants[0] <= t + RESTART_UNFENCE_NS):
            return grants[0]
        return t if thawed else t + self.restart_unfence_ns


@dataclass
class _Partition:
    replicas: list[int]
    leader: int | None
    isr: list[int]
    epoch: int = 0
    elr: list[int] = field(default_factory=list)
    last_known: int | None = None                     # ELR on: the leader when the ISR emptied
    logs: dict = field(default_factory=dict)          # broker -> [[epoch, t0, t1], ...]
    appended: list = field(default_factory=list)      # every segment any leader (or zombie) ever appended
    caught_up: dict = field(default_factory=dict)     # follower -> last time it was caught up
    view: dict = field(default_factory=dict)          # broker -> (leader, epoch, isr) it believes
    epoch_reason: dict = field(default_factory=dict)  # epoch -> how its leader was chosen
    elections: list = field(default_factory=list)     # (epoch, t, how, leader, its log, its cuts) when elected
    cuts: dict = field(default_factory=dict)          # broker -> [(power-cut broker, [epoch, t0, t1], Cause), ...]
    #                                                   its log lacks through a power loss, its own or a copied log's
    down_since: dict = field(default_factory=dict)    # "no_leader"/"under_min_isr" -> start time
    adding: list = field(default_factory=list)        # a reassignment in progress: replicas joining
    removing: list = field(default_factory=list)      # ... and replicas leaving once the new ones are in the ISR



class _State:
    def __init__(self, cfg: ModelConfig, faults: list[FaultEffect], samples: pd.DataFrame, t_begin: int, t_end: int,
                 leader_fenced_first: bool = False, slow_mode: str = "lagging", timing: Timing | None = None):
        self.cfg, self.t_end, self.leader_fenced_first = cfg, t_end, leader_fenced_first
        self.timing = timing or Timing()
        self.slow_mode = slow_mode              # how a CPU-starved node behaves in this replay (see run_model)
        self.faults = sorted(faults, key=lambda f: f.t_ns)
        self.events: list[dict] = []
        self.truncs: list[Window] = []
        self.risk: list[Window] = []
        self.unavailable: list[Window] = []
        self.zk_mode = cfg.zookeeper_mode
        self.nodes, self.parts = self._initial_state(samples, t_begin)      # the brokers
        # the KRaft quorum; in ZooKeeper mode the ZooKeeper node (the controller is then a broker)
        self.voters = sorted(cfg.zookeeper if self.zk_mode else cfg.controllers) or self.nodes
        everyone = set(self.nodes) | set(self.voters)
        self.alive = {n: True for n in everyone}
        self.paused = {n: False for n in everyone}
        self.slow = {n: False for n in everyone}
        self.fenced = {n: False for n in self.nodes}
        self.unclean_restart = {n: False for n in self.nodes}
        self.last_hb = {n: t_begin for n in self.nodes}
        self.drops: dict[int, set] = {}          # fault index -> set of (src, dst)
        self.slow_links: dict[int, set] = {}     # fault index -> set of (follower, leader) slowed replication links
        self.controller: int | None = self._first_controller(samples) if self.zk_mode else min(self.voters)
        self.offline_pending: set[int] = set()      # ZooKeeper mode: expired brokers no controller handled yet
        self.registered_at: dict[int, int] = {}     # ZooKeeper mode: when a broker registered again after expiry
        self.connected_since: dict[int, int | None] = {n: t_begin - METADATA_CATCHUP_NS for n in self.nodes}
        self.ready_at: dict[int, int] = {n: t_begin for n in self.nodes}    # a fenced broker is unfenced from then
        self.thawed: set[int] = set()       # brokers paused and resumed since they last (re)started
        self.new_incarnation: set[int] = set()      # restarted before their old session lapsed (_heartbeats,
        #                                             ZooKeeper mode: _zk_refused_registration)
        self.fence_pending: set[int] = set()    # KRaft: expired, still to be fenced in this tick (_Controller._fence)
        self.starting: set[int] = set()     # restarted, not yet unfenced (registered): serving nothing (_refresh_views)
        self.fetch_cut: dict[tuple, int] = {}           # (follower, leader) -> when their link was cut, both up
        self.fetch_stuck_until: dict[tuple, int] = {}   # (follower, leader) -> when its fetcher works again
        self.started_at: dict[int, int] = {}    # when each broker's process last started again
        self.down_at: dict[int, int] = {}       # when each broker was last killed, stopped or paused

    @property
    def catchup_ns(self) -> int:
        """The longest a broker reconnected to the controller takes to act on the metadata log's news."""
        return max(METADATA_CATCHUP_NS, self.timing.catchup_ns)

    def catchup_for(self, n) -> int:
        """How long broker n, reconnected, takes to act on the metadata log's news: a thawed JVM (KRaft) as long as
        this replay allows (Timing.catchup_ns; seen 18 s after a 45 s pause), any other METADATA_CATCHUP_NS (seen
        3 s after a network heal). The ZooKeeper mode keeps its own bounds."""
        return self.timing.catchup_ns if n in self.thawed and not self.zk_mode else METADATA_CATCHUP_NS

    def went_down(self, n, t: int):
        """A node was killed, stopped or paused at t."""
        self.down_at[n] = t

    def restarted(self, n, t: int, thawed: bool = False):
        """A broker process started again (or thawed) at t: from when the controller may unfence it. A restarted
        process is a new incarnation in either mode: it serves nothing until it has registered, and one restarted
        before its old session lapsed cannot register until then (_Controller._refused_registration,
        _ZooKeeperMode._zk_refused_registration)."""
        if n not in self.ready_at:
            return                              # a controller or ZooKeeper node
        self.ready_at[n] = self.timing.ready_after(n, t, thawed, self.down_at.get(n))
        if thawed:
            self.thawed.add(n)
        else:
            self.started_at[n] = t
            self.thawed.discard(n)
            self.starting.add(n)
            if not self.fenced[n]:
                self.new_incarnation.add(n)     # its old registration lives on: KRaft's session, ZooKeeper's znode

    def _initial_state(self, samples: pd.DataFrame, t0: int):
        cfg = self.cfg
        nodes = set(cfg.brokers or range(1, cfg.replication_factor + 1))
        if not cfg.brokers:
            for f in self.faults:
                nodes |= set(f.nodes) - set(cfg.controllers) - set(cfg.zookeeper)
        parts = {}
        moved = {}        # the replicas a partition had before its first reassignment (the samples show both sets)
        for f in self.faults:
            if f.effect == "reassign" and f.action == "start" and f.moves and f.partition not in moved:
                moved[f.partition] = list(f.moves[0])
        for p in range(cfg.partitions):
            rows = samples[samples["partition"] == p].sort_values("t_ns") if len(samples) else samples
            if len(rows):
                first = rows.iloc[0]
                isr = [int(x) for x in first["isr"]]
                seen = [int(x) for r in _distinct(rows["isr"]) for x in r]
                leader = None if pd.isna(first["leader"]) else int(first["leader"])
                replicas = list(dict.fromkeys(([leader] if leader is not None else []) + isr + seen))
                if p in moved:
                    replicas = list(dict.fromkeys([r for r in [leader] + isr if r in moved[p]] + moved[p]))
                    isr = [r for r in isr if r in replicas]
            else:
                ordered = sorted(nodes)
                k = p % len(ordered)
                replicas = moved.get(p) or (ordered[k:] + ordered[:k])[:cfg.replication_factor]
                leader, isr = replicas[0], list(replicas)
            nodes |= set(replicas)
            part = _Partition(replicas=replicas, leader=leader, isr=isr)
            part.logs = {r: [[0, t0, t0]] for r in replicas}
            part.caught_up = {r: t0 for r in replicas}
            part.view = {r: (leader, 0, tuple(isr)) for r in replicas}
            part.epoch_reason = {0: "initial leader"}
            parts[p] = part
        return sorted(nodes), parts

    def _first_controller(self, samples: pd.DataFrame) -> int:
        """ZooKeeper mode: the controller broker the first sample saw, else the lowest broker id."""
        if len(samples) and "controller" in samples.columns:
            seen = samples.sort_values("t_ns")["controller"].dropna()
            if len(seen) and int(seen.iloc[0]) in self.nodes:
                return int(seen.iloc[0])
        return min(self.nodes)

    # -- connectivity ----------------------------------------------------------------------------------------
    def up(self, n) -> bool:
        return n == "client" or (self.alive.get(n, False) and not self.paused.get(n, False))

    def can(self, src, dst) -> bool:
        return self.up(src) and self.up(dst) and (not self.drops or all((src, dst) not in d for d in
                                                                          self.drops.values()))

    def lagging(self, n) -> bool:
        """A slowed follower that fetches too slowly to reach its leader's log end (this replay's slow mode: a
        fenced one lags too, as it is starved; it is out of the ISR either way)."""
        return self.slow.get(n, False) and self.slow_mode in ("lagging", "fenced")

    def link_lagging(self, follower, leader) -> bool:
        """The follower's fetch link to the leader is slowed (effect `link`, a toxic on the link proxy) and in this
        replay that makes it lag, as a slowed node's fetches do (the recorded and late replays; the keeping-up one
        lets it keep up). Kafka judges a follower by its fetches alone: it is caught up when a fetch reaches the
        leader's log end as of the previous fetch (Replica.updateFetchStateOrThrow, lastCaughtUpTimeMs), and is
        shrunk out once that is older than replica.lag.time.max.ms (Partition.getOutOfSyncReplicas). So a link
        whose round trip (latency) or throughput (a cap below the partition's write rate) keeps fetches from
        reaching the log end drives it out; a faster one only delays acks=all writes. Heartbeats go to the
        controller, whose links are not proxied: a slowed link never fences a broker."""
        slowed = any((follower, leader) in s for s in self.slow_links.values())
        return slowed and self.slow_mode in ("lagging", "fenced")

    def misses_heartbeats(self, n) -> bool:
        """A slowed broker whose heartbeats no longer reach the controller in time (this replay's slow mode)."""
        return self.slow.get(n, False) and self.slow_mode == "fenced"

    def link(self, a, b) -> bool:
        return a == b and self.up(a) or (self.can(a, b) and self.can(b, a))


def _distinct(lists):
    """The distinct member lists among `lists`, in order of first appearance: their members, in order, are first seen
    where the whole sequence's are (a 10M-send run's 240,012 samples hold a handful of distinct ISRs)."""
    seen = {}
    for x in lists:
        seen.setdefault(members_key(x), x)
    return seen.values()
