"""A real Kafka cluster in Docker on its own bridge network: N brokers plus dedicated KRaft controllers, or, in
ZooKeeper mode, N brokers plus one ZooKeeper node (run from ZooKeeper's jars, which 2.x/3.x brokers depend on).

Every container and the network carry labels (harness, cluster name, run id, owner pid), so a crashed run's
leftovers can be found and removed (`kafka-chaos cluster down --all`), and a watchdog removes them if the owning
process dies. Live metadata (leader, ISR, high watermark, active controller) is read from the running cluster.
"""
from __future__ import annotations

import ipaddress
import json
import logging
import os
import subprocess
import uuid
from pathlib import Path

import docker.errors
from docker.types import IPAMConfig, IPAMPool

import docker
from kafka_chaos.base.errors import EnvironmentProblem, UsageError
from kafka_chaos.base.paths import DOCKER_CONTEXT
from kafka_chaos.base.processes import pid_alive
from kafka_chaos.base.waiting import WaitTimeout, wait_until
from kafka_chaos.cluster import config as cfg
from kafka_chaos.cluster import distribution, image, linkproxy, powerfs
from kafka_chaos.cluster.config import ClusterConfig
from kafka_chaos.cluster.engine import docker_client
from kafka_chaos.cluster.metadata import ClusterMetadata, PartitionState  # noqa: F401  (PartitionState: re-exported)
from kafka_chaos.cluster.node import Node
from kafka_chaos.cluster.reaper import LABEL_RUN, Reaper, remove_labelled

log = logging.getLogger(__name__)

LABEL = "kafka-chaos"
LABEL_CLUSTER = "kafka-chaos.cluster"
LABEL_OWNER = "kafka-chaos.owner-pid"
LABEL_CONFIG = "kafka-chaos.config"
SUBNET_POOL = ipaddress.ip_network("172.29.0.0/16")


class KafkaCluster(ClusterMetadata):
    """Start with `up()` or as a context manager; `attach(name)` finds a cluster started by another process."""

    def __init__(self, config: ClusterConfig | None = None, *, persistent: bool = False,
                 client: docker.DockerClient | None = None):
        self.config = config or ClusterConfig()
        self.config.validate()
        self.persistent = persistent          # a CLI `cluster up` outlives its process: no watchdog
        self.client = client or docker_client()
        self.run_id = f"{self.config.name}-{uuid.uuid4().hex[:8]}"
        self.version: str = self.config.kafka_version or ""
        self.image: str = ""
        self.cluster_id = cfg.new_cluster_id()
        self.subnet: ipaddress.IPv4Network | None = None
        self.nodes: list[Node] = []
        self._reaper: Reaper | None = None
        self._admin = None

    # ---- naming --------------------------------------------------------------------------------------------
    @property
    def network_name(self) -> str:
        return f"kc-{self.config.name}"

    def _container_name(self, role: str, node_id: int) -> str:
        return f"kc-{self.config.name}-{role[0] if role in ('broker', 'zookeeper') else 'c'}{node_id}"

    def _ip(self, role: str, node_id: int) -> str:
        hosts = list(self.subnet.hosts())
        return str(hosts[(10 + node_id if role == "broker" else node_id) - 1])

    @property
    def gateway_ip(self) -> str:
        """Where the harness's clients come from, as the nodes see them."""
        return str(next(self.subnet.hosts()))

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self.nodes if n.role == "broker"]

    @property
    def controllers(self) -> list[Node]:
        return [n for n in self.nodes if n.role == "controller"]

    @property
    def zookeepers(self) -> list[Node]:
        return [n for n in self.nodes if n.role == "zookeeper"]

    @property
    def metadata_mode(self) -> str:
        return self.config.metadata or cfg.metadata_mode(self.version, None)

    def node(self, node_id: int) -> Node:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise UsageError(f"no node {node_id} in cluster {self.config.name}",
                         f"nodes are: {', '.join(str(n.id) for n in self.nodes)}")

    @property
    def bootstrap_servers(self) -> str:
        """Where the workload's clients start: the brokers, or with the link proxy their client links on it."""
        if self.config.link_proxy:
            return ",".join(f"{self.proxy_ip}:{linkproxy.CLIENT_PORT_BASE + n.id}" for n in self.brokers)
        return ",".join(f"{n.ip}:{cfg.BROKER_PORT}" for n in self.brokers)

    @property
    def admin_bootstrap_servers(self) -> str:
        """The harness's own view (metadata sampling): never through the link proxy."""
        if self.config.link_proxy:
            return ",".join(f"{n.ip}:{linkproxy.DIRECT_PORT}" for n in self.brokers)
        return self.bootstrap_servers

    @property
    def proxy_ip(self) -> str:
        return str(list(self.subnet.hosts())[linkproxy.HOST_INDEX - 1])

    def link_proxy(self) -> linkproxy.LinkProxy:
        """The Toxiproxy on this cluster's links; UsageError if it was started without one."""
        if not self.config.link_proxy:
            raise UsageError(f"cluster {self.config.name} has no link proxy (it was started without one)",
                             "start the cluster with --link-proxy (a link scenario does so itself)")
        return linkproxy.LinkProxy(self.proxy_ip, linkproxy.container_name(self.config.name))

    def layer_rows(self) -> list[str]:
        """`status` rows for the link proxy (with the toxics in force) and the power-loss layer."""
        rows = [linkproxy.status_row(self.client, linkproxy.container_name(self.config.name), self.proxy_ip)] \
            if self.config.link_proxy else []
        return rows + ([powerfs.STATUS_LINE] if self.config.power_loss_fs else [])

    def labels(self) -> dict[str, str]:
        return {LABEL: "1", LABEL_CLUSTER: self.config.name, LABEL_RUN: self.run_id,
                LABEL_OWNER: "0" if self.persistent else str(os.getpid())}

    # ---- lifecycle -----------------------------------------------------------------------------------------
    def __enter__(self) -> "KafkaCluster":
        self.up()
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def up(self, timeout: float = 120) -> "KafkaCluster":
        """Resolve jars and image, create network and nodes, wait until every broker has registered."""

        sweep_orphans(self.client)
        self._check_name_free()
        if self.config.power_loss_fs:
            powerfs.check_host()
        if self.config.image:
            self.image = image.use_external_image(self.client, self.config.image)
            if not self.version:
                raise UsageError("--image needs --kafka-version (the model depends on it)", "add --kafka-version V")
        else:
            dist = distribution.resolve(self.config.kafka_version)
            self.version = dist.version
        self.config.metadata = cfg.metadata_mode(self.version, self.config.metadata)
        if not self.config.image:
            self.image = image.ensure_broker_image(self.client, dist)
        self._reaper = Reaper(self.run_id)
        try:
            self._create_network()
            self._start_link_proxy()
            self._create_nodes()
            self.wait_ready(timeout)
        except BaseException:
            log.info("cluster %s did not come up: removing it", self.config.name)
            # The watchdog stays armed: a container whose creation an interrupt cut short can appear after this
            # removal, and the watchdog sweeps the run's label again once this process is gone.
            reaper, self._reaper = self._reaper, None
            self.down()
            self._reaper = reaper
            raise
        if self.persistent:
            self._reaper.release()
            self._reaper = None
        return self

    def _check_name_free(self) -> None:
        if self.client.networks.list(names=[self.network_name]) or self.client.containers.list(
            all=True, ignore_removed=True, filters={"label": f"{LABEL_CLUSTER}={self.config.name}"}
        ):
            raise UsageError(
                f"a cluster named '{self.config.name}' already exists (network {self.network_name})",
                f"remove it with `kafka-chaos cluster down --name {self.config.name}`, reuse it, "
                "or pick another --name",
            )

    def _used_subnets(self) -> list[ipaddress.IPv4Network]:
        used = []
        for n in self.client.networks.list():
            for c in (n.attrs.get("IPAM") or {}).get("Config") or []:
                if c.get("Subnet") and ":" not in c["Subnet"]:
                    used.append(ipaddress.ip_network(c["Subnet"], strict=False))
        try:
            routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
            for line in routes.splitlines():
                dest = line.split()[0]
                if "/" in dest:
                    used.append(ipaddress.ip_network(dest, strict=False))
        except FileNotFoundError:
            pass
        return used

    def _pick_subnet(self) -> ipaddress.IPv4Network:
        used = self._used_subnets()
        if self.config.subnet:
            want = ipaddress.ip_network(self.config.subnet, strict=False)
            clash = [u for u in used if u.overlaps(want)]
            if clash:
                raise UsageError(f"subnet {want} overlaps {clash[0]}, already used on this host",
                                 "pick another --subnet, or omit it to use a free one")
            return want
        for candidate in SUBNET_POOL.subnets(new_prefix=24):
            if not any(u.overlaps(candidate) for u in used):
                return candidate
        raise EnvironmentProblem(f"no free /24 left in {SUBNET_POOL}", "remove old networks: docker network prune")

    def _create_network(self) -> None:
        self.subnet = self._pick_subnet()
        gateway = str(next(self.subnet.hosts()))
        labels = self.labels() | {LABEL_CONFIG: json.dumps({
            "config": json.loads(self.config.to_json()), "version": self.version, "image": self.image,
            "cluster_id": self.cluster_id, "subnet": str(self.subnet)})}
        try:
            self.client.networks.create(
                self.network_name, driver="bridge", labels=labels, check_duplicate=True,
                ipam=IPAMConfig(pool_configs=[IPAMPool(subnet=str(self.subnet), gateway=gateway)]),
            )
        except docker.errors.APIError as e:
            raise UsageError(f"cannot create network {self.network_name} on {self.subnet}: {e.explanation}",
                             "pick another --subnet or --name") from e

    def _node_specs(self) -> list[tuple[str, int, str]]:
        """(role, id, properties) of every node, metadata nodes first."""
        c = self.config
        if c.zookeeper_mode:
            zk_ip = self._ip("zookeeper", cfg.ZOOKEEPER_NODE_ID)
            specs = [("zookeeper", cfg.ZOOKEEPER_NODE_ID, cfg.zookeeper_properties())]
            return specs + [("broker", i, cfg.broker_properties(c, self.version, i, self._ip("broker", i), {}, zk_ip,
                                                                  self._listeners(i)))
                            for i in range(1, c.brokers + 1)]
        controller_ids = [cfg.FIRST_CONTROLLER_ID + i for i in range(c.controllers)]
        controller_ips = {i: self._ip("controller", i) for i in controller_ids}
        specs = [("controller", i, cfg.controller_properties(c, self.version, i, controller_ips))
                 for i in controller_ids]
        return specs + [("broker", i, cfg.broker_properties(c, self.version, i, self._ip("broker", i),
                                                              controller_ips, listeners=self._listeners(i)))
                        for i in range(1, c.brokers + 1)]

    def _start_link_proxy(self) -> None:
        """With --link-proxy: the Toxiproxy container and every link on it, before any broker connects."""
        if not self.config.link_proxy:
            return
        ips = {i: self._ip("broker", i) for i in range(1, self.config.brokers + 1)}
        linkproxy.start(self.client, linkproxy.ensure_image(self.client), self.network_name,
                        linkproxy.container_name(self.config.name), self.proxy_ip, self.labels(),
                        linkproxy.proxy_specs(ips, cfg.BROKER_PORT))

    def _listeners(self, node_id: int) -> dict[str, str] | None:
        if not self.config.link_proxy:
            return None
        return linkproxy.broker_listeners(node_id, self._ip("broker", node_id), list(range(1, self.config.brokers + 1)),
                                          self.proxy_ip, cfg.BROKER_PORT)

    def _create_nodes(self) -> None:
        c = self.config
        specs = self._node_specs()
        fmt = cfg.format_args(c, self.version)
        env = {"CLUSTER_ID": self.cluster_id, "KAFKA_HEAP_OPTS": c.heap_opts, "KAFKA_FORMAT_ARGS": fmt,
               "KAFKA_METADATA": c.metadata or cfg.KRAFT}
        extra = {}
        if self.config.image:
            # Another Kafka image (e.g. apache/kafka:V): run our launch script in it, with the image's own log
            # config; it has Kafka's jars in /opt/kafka/libs. Network faults need iptables in that image.
            extra["entrypoint"] = ["bash", "-c", (DOCKER_CONTEXT / "launch").read_text()]
            env["KAFKA_LOG4J_OPTS"] = ("-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.yaml"
                                       if cfg.version_tuple(self.version) >= (4, 0, 0)
                                       else "-Dlog4j.configuration=file:/opt/kafka/config/log4j.properties")
        for role, node_id, props in specs:
            name, ip = self._container_name(role, node_id), self._ip(role, node_id)
            volumes = self._power_loss_volumes(node_id) if role == "broker" else {}
            self.client.containers.run(
                self.image, name=name, hostname=name, detach=True,
                labels=self.labels() | {"kafka-chaos.node-id": str(node_id), "kafka-chaos.role": role},
                cap_add=["NET_ADMIN"], network=self.network_name,
                networking_config={self.network_name: self.client.api.create_endpoint_config(ipv4_address=ip)},
                environment=env | {"KAFKA_PROPERTIES": props, "NODE_ROLE": role}, mem_limit="2g", volumes=volumes,
                **extra,
            )
            self.nodes.append(Node(node_id, role, name, ip, self.client))

    def _power_loss_volumes(self, node_id: int) -> dict:
        """With the power-loss layer: the broker's log dir is its lazyfs mount, made on the host and bound in."""
        if not self.config.power_loss_fs:
            return {}
        powerfs.prepare_run(self.run_id, 0 if self.persistent else os.getpid())
        mnt = powerfs.PowerFS(self.run_id, node_id).mount().mnt
        return {str(mnt): {"bind": powerfs.DATA_DIR, "mode": "rw"}}

    def power_layer(self, node_id: int) -> powerfs.PowerFS:
        """The lazyfs mount under broker `node_id`'s log dir; UsageError if the cluster was started without one."""
        node = self.node(node_id)
        if not self.config.power_loss_fs or node.role != "broker":
            raise UsageError(f"{node} has no power-loss layer (cluster {self.config.name} was started without it)",
                             "start the cluster with --power-loss-fs (a power-loss scenario does so itself)")
        return powerfs.PowerFS(self.run_id, node_id)

    def wait_ready(self, timeout: float = 120) -> None:
        """Every broker registered with the controller and answering clients."""
        want = {n.id for n in self.brokers}

        def ready():
            for n in self.nodes:
                if n.state() in ("exited", "dead", "missing"):
                    raise WaitTimeout(f"{n} exited while starting. Last log lines:\n{n.logs(tail=30)}")
            md = self.admin().list_topics(timeout=3)
            return want <= set(md.brokers)

        wait_until(ready, timeout, lambda: f"cluster {self.config.name}: brokers not ready after {timeout:.0f} s. "
                   + self._log_tails())

    def _log_tails(self, lines: int = 15) -> str:
        return "".join(f"\n--- {n} ({n.state()}), last log lines:\n{n.logs(tail=lines)}" for n in self.nodes)

    def down(self, logs_to: Path | None = None) -> None:
        """Remove the nodes and the network (after saving each node's log to `logs_to`)."""
        if logs_to:
            self.save_logs(logs_to)
        self._admin = None
        remove_labelled(f"{LABEL_RUN}={self.run_id}")
        powerfs.remove_run(self.run_id)
        if self._reaper:
            self._reaper.release()
            self._reaper = None
        self.nodes = []

    def save_logs(self, directory: Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for n in self.nodes:
            (directory / f"{n.name}.log").write_text(n.logs())

    @classmethod
    def attach(cls, name: str = "kafka-chaos", client: docker.DockerClient | None = None) -> "KafkaCluster":
        """The running cluster `name`, as its labels describe it."""
        client = client or docker_client()
        nets = client.networks.list(filters={"label": f"{LABEL_CLUSTER}={name}"})
        if not nets:
            raise UsageError(f"no cluster named '{name}' is running", "start one: kafka-chaos cluster up")
        net = nets[0]
        info = json.loads(net.attrs["Labels"][LABEL_CONFIG])
        self = cls.__new__(cls)
        self.config = ClusterConfig(**info["config"])
        self.persistent = net.attrs["Labels"].get(LABEL_OWNER) == "0"
        self.client = client
        self.run_id = net.attrs["Labels"][LABEL_RUN]
        self.version, self.image, self.cluster_id = info["version"], info["image"], info["cluster_id"]
        self.subnet = ipaddress.ip_network(info["subnet"])
        self._reaper, self._admin = None, None
        self.nodes = []
        for c in client.containers.list(all=True, ignore_removed=True, filters={"label": f"{LABEL_RUN}={self.run_id}"}):
            if c.labels.get("kafka-chaos.role") == linkproxy.ROLE:
                continue                          # not a node: the link proxy (link_proxy())
            role, node_id = c.labels["kafka-chaos.role"], int(c.labels["kafka-chaos.node-id"])
            self.nodes.append(Node(node_id, role, c.name, self._ip(role, node_id), client))
        self.nodes.sort(key=lambda n: (n.role != "broker", n.id))
        if self.config.metadata is None:          # a cluster from before ZooKeeper mode existed: KRaft
            self.config.metadata = cfg.KRAFT
        return self


def sweep_orphans(client: docker.DockerClient) -> int:
    """Remove clusters whose owning process on this host is gone (a crashed run that its reaper missed)."""
    runs = set()
    for c in client.containers.list(all=True, ignore_removed=True, filters={"label": LABEL}):
        owner = int(c.labels.get(LABEL_OWNER, "0") or 0)
        if owner and not pid_alive(owner):
            runs.add(c.labels[LABEL_RUN])
    for n in client.networks.list(filters={"label": LABEL}):
        owner = int(n.attrs["Labels"].get(LABEL_OWNER, "0") or 0)
        if owner and not pid_alive(owner):
            runs.add(n.attrs["Labels"][LABEL_RUN])
    for run in runs:
        log.info("removing leftovers of run %s (its process is gone)", run)
        remove_labelled(f"{LABEL_RUN}={run}")
        powerfs.remove_run(run)
    powerfs.sweep_orphans()
    return len(runs)


def remove_all() -> int:
    """Remove every container and network kafka-chaos made on this engine, and every lazyfs mount it made."""
    n = remove_labelled(f"{LABEL}=1")
    powerfs.remove_all()
    return n
