"""Cluster configuration, and the server.properties each node gets from it."""
from __future__ import annotations

import base64
import json
import uuid
from dataclasses import asdict, dataclass, field

from kafka_chaos.base.errors import UsageError
from kafka_chaos.base.versions import ELR_DEFAULT_FROM, KRAFT, ZOOKEEPER, metadata_modes, version_tuple

BROKER_PORT, CONTROLLER_PORT, ZOOKEEPER_PORT = 9092, 9093, 2181
FIRST_CONTROLLER_ID = 101
ZOOKEEPER_NODE_ID = 201          # the ZooKeeper node's id in faults and meta.json (brokers 1..9, controllers 101..)

# KIP-966: 3.9's ReplicationControlManager.isElrEnabled is eligible.leader.replicas.enable and a metadata version
# of at least IBP_4_0_IV0 (MetadataVersion.isElrSupported), past 3.9's LATEST_PRODUCTION (IBP_3_9_IV0); from 4.0 a
# feature (eligible.leader.replicas.version, format_args).
ELR_FROM = (4, 0, 0)

# Kafka's own defaults for the settings a scenario may change (ReplicationConfigs, KRaftConfigs, LogConfig).
KAFKA_DEFAULTS = {
    "min.insync.replicas": "1",
    "unclean.leader.election.enable": "false",
    "replica.lag.time.max.ms": "30000",
    "broker.session.timeout.ms": "9000",
    "broker.heartbeat.interval.ms": "2000",
    "zookeeper.session.timeout.ms": "18000",      # KIP-537, from 2.5 (6000 before)
}


@dataclass
class ClusterConfig:
    """What a cluster is made of and the broker settings scenarios turn.

    Defaults favour quick fault detection on a small machine: the ISR lag time is 10 s instead of 30 s.
    """

    name: str = "kafka-chaos"
    kafka_version: str | None = None            # None: the newest 4.x Maven Central serves
    brokers: int = 3
    controllers: int = 1
    min_insync_replicas: int = int(KAFKA_DEFAULTS["min.insync.replicas"])   # `cluster up`'s; a chaos run's: 2
    unclean_leader_election: bool = False
    replica_lag_time_max_ms: int = 10000
    broker_session_timeout_ms: int = 9000
    broker_heartbeat_interval_ms: int = 2000
    elr: bool | None = None                     # None: the version's default (on for new clusters from 4.1)
    transaction_version: int | None = None      # the transaction.version feature (4.0+: 2 is KIP-890's); None: default
    metadata: str | None = None                 # kraft | zookeeper; None: KRaft where the release has it
    zookeeper_session_timeout_ms: int | None = None   # ZooKeeper mode's broker session; None: Kafka's default
    log_flush_interval_messages: int | None = None
    log_flush_interval_ms: int | None = None
    heap_opts: str = "-Xms256m -Xmx768m"
    subnet: str | None = None                   # None: the first free /24 in 172.29.0.0/16
    image: str | None = None                    # None: build kafka-chaos-broker locally
    power_loss_fs: bool = False                 # brokers' log dirs on lazyfs (cluster/powerfs.py): power loss
    link_proxy: bool = False                    # client and replication links through Toxiproxy (cluster/linkproxy.py)
    extra_settings: dict[str, str] = field(default_factory=dict)   # --broker-config settings without a field here
    topic_settings: dict[str, str] = field(default_factory=dict)   # `cluster up --topic-config`: every run's topic

    def validate(self) -> None:
        if not 1 <= self.brokers <= 9:
            raise UsageError(f"--brokers {self.brokers}: a cluster has 1 to 9 brokers", "use --brokers 3")
        if self.controllers not in (1, 3, 5):
            raise UsageError(f"--controllers {self.controllers}: a KRaft quorum has 1, 3 or 5 controllers",
                             "use --controllers 1 or 3")
        if not 1 <= self.min_insync_replicas <= self.brokers:
            raise UsageError(f"min.insync.replicas {self.min_insync_replicas} must be between 1 and {self.brokers}",
                             "lower --min-isr")
        if self.metadata not in (None, KRAFT, ZOOKEEPER):
            raise UsageError(f"--metadata {self.metadata}: not a metadata mode", "use --metadata kraft or zookeeper")
        if self.transaction_version not in (None, 0, 1, 2):
            raise UsageError(f"--transaction-version {self.transaction_version}: Kafka's levels are 0, 1 and 2",
                             "use --transaction-version 1 or 2")
        if self.transaction_version is not None and self.kafka_version and \
                version_tuple(self.kafka_version) < (4, 0, 0):
            raise UsageError(f"--transaction-version on Kafka {self.kafka_version}: the feature exists from 4.0",
                             "leave it out, or use a 4.x release")
        if self.elr and self.kafka_version and version_tuple(self.kafka_version) < ELR_FROM:
            raise UsageError(f"--elr on Kafka {self.kafka_version}: eligible leader replicas need metadata version "
                             "4.0 (MetadataVersion.isElrSupported), which this release does not run",
                             "leave it out, or use a 4.x release")
        if self.kafka_version:
            metadata_mode(self.kafka_version, self.metadata)
        if not self.name.replace("-", "").isalnum():
            raise UsageError(f"cluster name '{self.name}' may hold only letters, digits and '-'", "rename it")

    @property
    def zookeeper_mode(self) -> bool:
        return self.metadata == ZOOKEEPER

    def broker_settings(self) -> dict[str, str]:
        """Settings shared by every node (brokers and controllers read different ones). The broker's session is
        with the KRaft controller (broker.session.timeout.ms) or with ZooKeeper (zookeeper.session.timeout.ms)."""
        s = {
            "min.insync.replicas": str(self.min_insync_replicas),
            "unclean.leader.election.enable": str(self.unclean_leader_election).lower(),
            "replica.lag.time.max.ms": str(self.replica_lag_time_max_ms),
        }
        if not self.zookeeper_mode:
            s["broker.session.timeout.ms"] = str(self.broker_session_timeout_ms)
            s["broker.heartbeat.interval.ms"] = str(self.broker_heartbeat_interval_ms)
        elif self.zookeeper_session_timeout_ms is not None:
            s["zookeeper.session.timeout.ms"] = str(self.zookeeper_session_timeout_ms)
        if self.log_flush_interval_messages is not None:
            s["log.flush.interval.messages"] = str(self.log_flush_interval_messages)
        if self.log_flush_interval_ms is not None:
            s["log.flush.interval.ms"] = str(self.log_flush_interval_ms)
        s.update(self.extra_settings)
        return s

    def changed_settings(self) -> dict[str, str]:
        """The broker settings that differ from Kafka's defaults (meta.json's broker_settings)."""
        return {k: v for k, v in self.broker_settings().items() if KAFKA_DEFAULTS.get(k) != v}

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def new_cluster_id() -> str:
    """A Kafka Uuid string: URL-safe base64 of 16 bytes without padding, not starting with '-'."""
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not s.startswith("-"):
            return s


def metadata_mode(version: str, asked: str | None) -> str:
    """The metadata mode a cluster of `version` runs: `asked`, or KRaft where the release has it, else ZooKeeper;
    UsageError naming the releases that have the mode asked for."""
    modes = metadata_modes(version)
    if asked is None:
        return modes[0]
    if asked not in modes:
        have = "KRaft from 3.9 on" if asked == KRAFT else "ZooKeeper mode up to 3.9 (removed in 4.0, KIP-833)"
        raise UsageError(f"Kafka {version} has no {asked} mode here (this harness runs {have})",
                         f"use --metadata {modes[0]}, or a release with {asked} mode")
    return asked


def elr_default(version: str) -> bool:
    return version_tuple(version) >= ELR_DEFAULT_FROM


def format_args(config: ClusterConfig, version: str) -> str:
    """Extra `kafka-storage format` flags: the ELR feature level, where the version has ELR (4.0+), and the
    transaction.version feature level (4.0+, KIP-1022's --feature)."""
    if config.zookeeper_mode or version_tuple(version) < (4, 0, 0):
        return ""
    flags = [] if config.elr is None else [f"--feature eligible.leader.replicas.version={1 if config.elr else 0}"]
    if config.transaction_version is not None:
        flags.append(f"--feature transaction.version={config.transaction_version}")
    return " ".join(flags)


def quorum_voters(controller_ips: dict[int, str]) -> str:
    return ",".join(f"{nid}@{ip}:{CONTROLLER_PORT}" for nid, ip in sorted(controller_ips.items()))


def _render(props: dict[str, str]) -> str:
    return "\n".join(f"{k}={v}" for k, v in props.items()) + "\n"


def _metadata_properties(config: ClusterConfig, node_id: int, controller_ips: dict[int, str],
                         zookeeper_ip: str | None) -> dict[str, str]:
    """How a broker finds its metadata: the KRaft quorum, or ZooKeeper (brokers register there; one of them is
    elected controller through the /controller znode)."""
    if config.zookeeper_mode:
        return {"broker.id": str(node_id), "zookeeper.connect": f"{zookeeper_ip}:{ZOOKEEPER_PORT}"}
    return {"process.roles": "broker", "node.id": str(node_id),
            "controller.quorum.voters": quorum_voters(controller_ips), "controller.listener.names": "CONTROLLER"}


def broker_properties(config: ClusterConfig, version: str, node_id: int, ip: str,
                      controller_ips: dict[int, str], zookeeper_ip: str | None = None,
                      listeners: dict[str, str] | None = None) -> str:
    """`listeners`: listener settings that replace the plain ones (the link proxy's, cluster/linkproxy.py)."""
    rf = min(3, config.brokers)
    props = {
        **_metadata_properties(config, node_id, controller_ips, zookeeper_ip),
        "listeners": f"PLAINTEXT://0.0.0.0:{BROKER_PORT}",
        "advertised.listeners": f"PLAINTEXT://{ip}:{BROKER_PORT}",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": "/var/lib/kafka/data",
        "num.partitions": "1",
        "default.replication.factor": str(rf),
        "offsets.topic.replication.factor": str(rf),
        "transaction.state.log.replication.factor": str(rf),
        "transaction.state.log.min.isr": str(min(2, rf)),
        "auto.create.topics.enable": "false",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "4",
        "num.replica.fetchers": "1",
        "background.threads": "4",
    }
    props.update(listeners or {})
    if version_tuple(version) >= (4, 0, 0):
        props["share.coordinator.state.topic.replication.factor"] = str(rf)
        props["share.coordinator.state.topic.min.isr"] = str(min(2, rf))
    props.update(config.broker_settings())
    return _render(props)


def controller_properties(config: ClusterConfig, version: str, node_id: int,
                          controller_ips: dict[int, str]) -> str:
    props = {
        "process.roles": "controller",
        "node.id": str(node_id),
        "controller.quorum.voters": quorum_voters(controller_ips),
        "listeners": f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": "/var/lib/kafka/data",
    }
    props.update(config.broker_settings())
    return _render(props)


def zookeeper_properties() -> str:
    """zoo.cfg of the one standalone ZooKeeper node. tickTime 1 s lets sessions from 2 s to 60 s be negotiated
    (ZooKeeper clamps a client's timeout to [2, 20] ticks by default, maxSessionTimeout lifts the top); the four
    letter words are on so the harness can read which session holds /controller (`dump`)."""
    return _render({
        "dataDir": "/var/lib/kafka/zookeeper", "clientPort": str(ZOOKEEPER_PORT), "tickTime": "1000",
        "minSessionTimeout": "2000", "maxSessionTimeout": "60000", "maxClientCnxns": "0",
        "admin.enableServer": "false", "4lw.commands.whitelist": "*",
    })
