"""What the model is told: the run's settings (ModelConfig), the fault effects it replays (FaultEffect), and the
timing constants it allows for. A FaultEffect is a faults.parquet row parsed for the model (history's FaultEffect is
the row as the nemesis recorded it)."""
from __future__ import annotations

import json
from dataclasses import dataclass, replace

from kafka_chaos.base.versions import version_tuple
from kafka_chaos.checkers.model.releases import applies, rules_used
from kafka_chaos.history.meta import RunMeta
from kafka_chaos.history.schema import ACKED, ACKS_LEVELS  # noqa: F401  (the model speaks of these acks levels)

TICK_NS = 100_000_000
REPLICATION_SLACK_NS = 1_500_000_000    # a follower may trail by replica.fetch.wait.max.ms (500 ms), more on a busy box
METADATA_SLACK_NS = 1_000_000_000      # clients learn of a new leader on their next metadata refresh
# A broker that reconnects to the controller (after a partition heals or a pause ends) acts on its old metadata
# until it has fetched the metadata log's new records: a deposed leader stays a zombie that long, and requests
# the clients' TCP stacks retransmit reach it at once. Seen here: acks=1 writes acked 3 s after a heal, then lost.
METADATA_CATCHUP_NS = 5_000_000_000
# ... and Kafka bounds none of it: the late replay allows this long. Seen here (4.4.0, load 26-48): brokers thawed
# after a 45 s pause learned they no longer led a partition 18 s after the thaw (two-brokers-pause, README).
METADATA_CATCHUP_LATE_NS = 20_000_000_000
# A restarted broker registers fenced (ClusterControlManager.registerBroker) and is unfenced only at a heartbeat
# that no longer asks to stay fenced, which it sends once it has started up: caught up with the metadata log and
# published it, which loads and recovers every log (BrokerServer.startup -> BrokerMetadataPublisher
# .initializeManagers -> LogManager.startup, then BrokerLifecycleManager.setReadyToUnfence), and whose metadata
# offset has reached its registration record (BrokerHeartbeatManager.calculateNextBrokerState). Kafka bounds none
# of it. Seen here (4.4.0, cascade-kill, load ~60): unfenced 17 s after the heal row (written after the fault's
# 30 s wait for the broker to register), and 62 s after the heal row for two brokers restarted together; on the
# idle machine 10 s. When the controller's log is in the results directory the model takes the real unfence times
# (history/controller_log.py); otherwise the recorded replay unfences at the restart and the late one this long
# after it, and an election that waited for it is predicted over that span (observed._span).
RESTART_UNFENCE_NS = 65_000_000_000
DIRTY_EXPIRE_NS = 30_000_000_000          # vm.dirty_expire_centisecs: page cache older than this is on disk
# vm.dirty_writeback_centisecs: how often the kernel's flusher looks for expired inodes (wb_kupdate in
# fs/fs-writeback.c; Documentation/admin-guide/sysctl/vm.rst), so a write can stay unsynced for expire + this.
DIRTY_WRITEBACK_NS = 5_000_000_000
IDEMPOTENCE_HORIZON_NS = 120_000_000_000   # the Java producer's delivery.timeout.ms: how long a write is retried
CLIENT_DEFAULT_RETRIES = 2_147_483_647   # librdkafka's `retries` default; meta.json writes null for "client default"
CLIENT_DEFAULT_MAX_IN_FLIGHT = 1_000_000
ELR_SUPPORTED_FROM = (4, 0, 0)          # KIP-966: MetadataVersion.isElrSupported is IBP_4_0_IV0 and later


def profile_int(profile: dict, key: str, default: int) -> int:
    """An integer setting of a meta.json producer profile; absent or null means the client's default."""
    value = profile.get(key)
    return default if value is None else int(value)


def elr_on_cluster(meta: RunMeta) -> bool:
    """Whether the run's cluster had eligible leader replicas: meta.json's `elr_enabled`, where the release and mode
    can have them at all. 3.9's ReplicationControlManager.isElrEnabled also needs metadata version IBP_4_0_IV0
    (MetadataVersion.isElrSupported), which no 3.x release runs as a stable version; ZooKeeper mode has no ELR. A
    3.x meta.json that says enabled (the harness passed `--elr` through before it refused it) is judged without."""
    return bool(meta.elr_enabled) and meta.metadata_mode == "kraft" and \
        version_tuple(meta.kafka_version) >= ELR_SUPPORTED_FROM


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
    request_timeout_ms: int = 30_000            # a replica fetcher's wait for an answer (_Sim.fetch_stuck_until)
    acks: tuple[str, ...] = ("all",)
    producers: tuple[dict, ...] = ()
    idempotent: tuple[bool, ...] = ()
    brokers: tuple[int, ...] = ()       # broker ids, the possible replicas; default 1..replication_factor
    controllers: tuple[int, ...] = ()   # dedicated KRaft controllers, the only voters; empty: the brokers vote
    flush_interval_messages: int | None = None   # the topic's flush.messages; None: Kafka's default (Long.MAX)
    flush_interval_ms: int | None = None         # the topic's flush.ms; None: never by time
    flush_check_ms: int | None = None            # log.flush.scheduler.interval.ms; None: the flusher never runs
    metadata_mode: str = "kraft"                 # kraft | zookeeper: who keeps the metadata, who decides
    zookeeper: tuple[int, ...] = ()              # ZooKeeper node ids (ZooKeeper mode)

    @classmethod
    def from_meta(cls, meta: RunMeta, acks: tuple[str, ...] = (), idempotent: tuple[bool, ...] = ()):
        acks = tuple(sorted(set(acks) or {str(p.get("acks") or "all") for p in meta.producers} or {"all"}))
        idem = tuple(sorted(set(idempotent) or {bool(p.get("idempotent")) for p in meta.producers}))
        return cls(kafka_version=meta.kafka_version, partitions=meta.partitions,
                   replication_factor=meta.replication_factor, min_insync_replicas=meta.min_insync_replicas,
                   unclean_leader_election=meta.unclean_leader_election, elr_enabled=elr_on_cluster(meta),
                   replica_lag_time_max_ms=meta.replica_lag_time_max_ms,
                   broker_session_timeout_ms=meta.broker_session_timeout_ms,
                   request_timeout_ms=meta.request_timeout_ms, acks=acks,
                   producers=tuple(meta.producers), idempotent=idem, brokers=tuple(meta.brokers),
                   controllers=tuple(meta.controllers), flush_interval_messages=meta.flush_interval_messages,
                   flush_interval_ms=meta.flush_interval_ms, flush_check_ms=meta.flush_check_ms,
                   metadata_mode=meta.metadata_mode, zookeeper=tuple(meta.zookeeper))

    @property
    def unflushed_ns(self) -> int:
        """How old an acknowledged write can be and still be only in the page cache, i.e. lost to a power loss.

        Kafka fsyncs a log in the append itself once flush.messages records are unflushed
        (UnifiedLog.append: `if (localLog.unflushedMessages >= config.flushInterval) flush(false)`), before the
        produce response: with flush.messages=1 every acked write is on disk. By time, LogManager.flushDirtyLogs
        flushes a log older than flush.ms, but only when the flusher runs, every log.flush.scheduler.interval.ms
        (Long.MAX by default: never). Otherwise the kernel writes an inode dirty for dirty_expire back on the
        flusher's next pass, at most dirty_writeback later (the power-loss layer, cluster/lazyfs.py, does the same)."""
        if self.flush_interval_messages == 1:
            return 0
        kernel = DIRTY_EXPIRE_NS + DIRTY_WRITEBACK_NS
        if self.flush_interval_ms is not None and self.flush_check_ms is not None:
            return min(kernel, (self.flush_interval_ms + self.flush_check_ms) * 1_000_000)
        return kernel

    @property
    def zookeeper_mode(self) -> bool:
        return self.metadata_mode == "zookeeper"

    @property
    def unclean_honoured(self) -> bool:
        """KRaft ignores unclean.leader.election.enable before 3.9; ZooKeeper mode always honoured it."""
        rule = "unclean_election_in_zookeeper" if self.zookeeper_mode else "unclean_election_in_kraft"
        return self.unclean_leader_election and applies(rule, self.kafka_version, self.metadata_mode)

    def applies(self, rule: str) -> bool:
        return applies(rule, self.kafka_version, self.metadata_mode)

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
                "flush_interval_messages": self.flush_interval_messages, "unflushed_ms": self.unflushed_ns // 1_000_000,
                "brokers": list(self.brokers), "controllers": list(self.controllers),
                "metadata_mode": self.metadata_mode, "zookeeper": list(self.zookeeper),
                "release_rules": rules_used(self.kafka_version, self.metadata_mode)}



@dataclass(frozen=True)
class FaultEffect:
    t_ns: int
    action: str                  # start | heal
    effect: str                  # kill | stop | pause | net | loss | latency | power_loss | damage | slow | reassign
    #                              | link | elect
    nodes: tuple[int, ...]
    drops: tuple[tuple, ...] = ()
    probability: float = 1.0
    fault: str = ""
    applied_ns: int | None = None   # a start row: when applying ended (the effect began in [t_ns, applied_ns])
    damaged: tuple[int, ...] = ()   # damage: the partitions whose log on the nodes was damaged (a data file of theirs)
    partition: int | None = None    # reassign: the partition moved
    moves: tuple = ()               # reassign: (replicas before, replicas after) the start row's move
    links: tuple = ()               # link: the slowed links, (follower, leader) or ("client", broker)
    row: int | None = None          # its row in history/faults.parquet: the cause id `f<row>` (checkers.excuses)
    preferred: int | None = None    # elect: the preferred replica a preferred-leader election was asked to elect

    @property
    def cause_id(self) -> str:
        return f"f{self.row}" if self.row is not None else f"fault {self.fault or self.effect} at {self.t_ns}"

    @classmethod
    def from_row(cls, t_ns, action, fault, nodes, details, row: int | None = None) -> "FaultEffect":
        d = json.loads(details) if isinstance(details, str) else dict(details or {})
        drops = tuple((_node(s), _node(t)) for s, t in d.get("drops", ()))
        applied = d.get("applied_ns")
        damaged = (int(d["partition"]),) if d.get("effect") == "damage" and d.get("file") != "quorum-state" \
            and d.get("partition") is not None else ()
        moves = (tuple(int(n) for n in d["from"]), tuple(int(n) for n in d["to"])) if "to" in d else ()
        part = d.get("partition")
        links = tuple((_node(s), _node(t)) for s, t in d.get("links", ())) if d.get("effect") == "link" else ()
        preferred = int(d["preferred"]) if d.get("effect") == "elect" and d.get("preferred") is not None else None
        return cls(t_ns=int(t_ns), action=action, effect=str(d.get("effect", "")), fault=fault,
                   nodes=tuple(int(n) for n in nodes), drops=drops,
                   probability=float(d.get("probability", 1.0)), applied_ns=int(applied) if applied else None,
                   damaged=damaged, partition=int(part) if part is not None else None, moves=moves, links=links,
                   row=row, preferred=preferred)



def worst_case_onsets(events: list[FaultEffect]) -> list[FaultEffect]:
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

