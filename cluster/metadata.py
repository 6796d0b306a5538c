"""What a running cluster says about itself: topics, leaders, ISRs, high watermarks, the active controller.

A mixin of KafkaCluster, which provides `admin_bootstrap_servers`, `nodes`, `controllers`, `zookeepers`, `config`,
`version`, `network_name`, `subnet` and the `_admin` slot. Reads go through a Metadata request any live broker answers.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from kafka_chaos.base.errors import HarnessError, UsageError
from kafka_chaos.base.waiting import retry_call, wait_until


@dataclass
class PartitionState:
    partition: int
    leader: int | None
    replicas: list[int]
    isr: list[int]


class ClusterMetadata:
    def admin(self):
        from confluent_kafka.admin import AdminClient

        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.admin_bootstrap_servers, "socket.timeout.ms": 10000,
                                       "socket.connection.setup.timeout.ms": 3000,
                                       "reconnect.backoff.max.ms": 1000, "log_level": 0})
        return self._admin

    def create_topic(self, topic: str, partitions: int = 3, replication_factor: int = 3,
                     configs: dict[str, str] | None = None, timeout: float = 30,
                     replica_assignment: list[list[int]] | None = None) -> None:
        """`replica_assignment`: each partition's replicas, preferred leader first (default: Kafka places them)."""
        from confluent_kafka.admin import NewTopic

        def new_topic():
            if replica_assignment:
                return NewTopic(topic, len(replica_assignment),       # and no replication factor: Kafka's rule
                                replica_assignment=[list(r) for r in replica_assignment], config=configs or {})
            return NewTopic(topic, partitions, replication_factor, config=configs or {})

        def create() -> bool:     # retried: brokers forward to the controller, which may just have failed over
            fut = self.admin().create_topics([new_topic()], request_timeout=10)[topic]
            try:
                fut.result(timeout=15)
            except Exception as e:
                if "TOPIC_ALREADY_EXISTS" not in str(e) or topic not in self.topics():
                    raise
            return True

        wait_until(create, timeout, f"could not create topic {topic}")
        wait_until(lambda: self.partitions_healthy(topic), timeout,
                   lambda: f"topic {topic} not ready after {timeout:.0f} s: {self._describe_or_error(topic)}")

    def delete_topics(self, topics: list[str] | None = None, timeout: float = 30) -> None:
        topics = topics if topics is not None else self.topics()
        if not topics:
            return
        def delete() -> bool:      # retried: just after a controller restart the first request may time out
            for fut in self.admin().delete_topics(topics, request_timeout=10).values():
                try:
                    fut.result(timeout=15)
                except Exception as e:
                    if "UNKNOWN_TOPIC" not in str(e):
                        raise
            return True

        wait_until(delete, timeout, f"could not delete topics {topics}")
        wait_until(lambda: not set(topics) & set(self.topics()), timeout, f"topics {topics} still exist")

    def topics(self) -> list[str]:
        md = self.admin().list_topics(timeout=5)
        return sorted(t for t in md.topics if not t.startswith("__"))

    def describe(self, topic: str, timeout: float = 5) -> list[PartitionState]:
        """Leader, replicas and ISR per partition, from a Metadata request that any live broker answers.

        (Not DescribeTopics: librdkafka sends that to the "controller" KRaft reports to clients, which is a random
        broker and may be the one a fault just killed.)
        """
        def known():
            t = self.admin().list_topics(topic=topic, timeout=timeout).topics.get(topic)
            if t is None or t.error is not None:
                raise _NotKnownHere(t.error if t else "absent")
            return t
        # Brokers replay the metadata log each at its own pace: one that has not reached the topic's creation
        # yet (seen just after create_topic, under load) answers UNKNOWN_TOPIC_OR_PART; another may know it.
        try:
            t = retry_call(known, timeout=UNKNOWN_TOPIC_GRACE_S, interval=0.25, errors=_NotKnownHere)
        except _NotKnownHere as e:
            raise UsageError(f"topic {topic} is unknown to the cluster ({e.args[0]})", "create it first") from None
        return sorted((PartitionState(p.id, p.leader if p.leader >= 0 else None, list(p.replicas), list(p.isrs))
                       for p in t.partitions.values()), key=lambda s: s.partition)

    def partition(self, topic: str, partition: int) -> PartitionState:
        for s in self.describe(topic):
            if s.partition == partition:
                return s
        raise UsageError(f"topic {topic} has no partition {partition}", "check the partition number")

    def leader(self, topic: str, partition: int = 0) -> int | None:
        return self.partition(topic, partition).leader

    def isr(self, topic: str, partition: int = 0) -> list[int]:
        return self.partition(topic, partition).isr

    def high_watermarks(self, topic: str, timeout: float = 5, stable: bool = False) -> dict[int, int]:
        """Each partition's high watermark; `stable`: its last stable offset instead (a read_committed
        ListOffsets: below the first open transaction's first offset)."""
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        parts = [TopicPartition(topic, s.partition) for s in self.describe(topic, timeout)]
        level = IsolationLevel.READ_COMMITTED if stable else IsolationLevel.READ_UNCOMMITTED
        res = self.admin().list_offsets({tp: OffsetSpec.latest() for tp in parts},
                                        isolation_level=level, request_timeout=timeout)
        return {tp.partition: fut.result(timeout=timeout).offset for tp, fut in res.items()}

    def active_controller(self) -> int | None:
        """The KRaft quorum leader: the highest-epoch leader recorded in the running controllers' quorum-state.
        In ZooKeeper mode: the broker elected controller (it holds /controller)."""
        if self.zookeepers:
            return self._zookeeper_controller()
        best: tuple[int, int] | None = None
        for n in self.controllers:
            if not n.is_running():
                continue
            text = n.read_file("/var/lib/kafka/data/__cluster_metadata-0/quorum-state")
            if not text:
                continue
            state = json.loads(text)
            leader, epoch = state.get("leaderId", -1), state.get("leaderEpoch", -1)
            if leader is not None and leader >= 0 and (best is None or epoch > best[1]):
                best = (leader, epoch)
        return best[0] if best else None

    def _zookeeper_controller(self) -> int | None:
        """The controller broker, as ZooKeeper's sessions show it; when ZooKeeper cannot be asked (a fault cut it
        from the harness), as a broker's Admin API answer (DescribeCluster: the controller that broker last heard
        from in UpdateMetadata, possibly stale)."""
        from kafka_chaos.cluster import zookeeper

        zk = self.zookeepers[0]
        if zk.is_running():
            try:
                return zookeeper.controller_from_dump(zookeeper.four_letter(zk.ip, "dump", timeout=1.0))
            except OSError:
                pass
        try:
            node = self.admin().describe_cluster(request_timeout=3).result(timeout=4).controller
        except Exception:
            return None
        return node.id if node is not None and node.id >= 0 else None

    def partitions_healthy(self, topic: str) -> bool:
        """Every partition of `topic` has a leader and a full ISR."""
        return all(s.leader is not None and set(s.isr) == set(s.replicas) for s in self.describe(topic))

    def is_healthy(self, topic: str) -> bool:
        """Every node runs unpaused, and every partition has a leader and a full ISR."""
        return all(n.state() == "running" for n in self.nodes) and self.partitions_healthy(topic)

    def wait_healthy(self, topic: str, timeout: float = 60) -> None:
        wait_until(lambda: self.is_healthy(topic), timeout,
                   lambda: f"topic {topic} not healthy after {timeout:.0f} s: {self._describe_or_error(topic)}")

    def _describe_or_error(self, topic: str) -> str:
        try:
            return "; ".join(f"p{s.partition} leader={s.leader} isr={s.isr} replicas={s.replicas}"
                             for s in self.describe(topic))
        except Exception as e:
            return f"cannot describe it ({e})"

    def status(self) -> str:
        """Nodes with their state, then per topic partition its leader and ISR."""
        lines = [f"cluster {self.config.name}: Kafka {self.version} ({self.config.metadata or 'kraft'} metadata), "
                 f"network {self.network_name} {self.subnet}",
                 f"bootstrap servers: {self.bootstrap_servers}", "",
                 f"{'NODE':>6}  {'ROLE':<10}  {'STATE':<8}  {'ADDRESS':<15}  CONTAINER"]
        controller = None
        try:
            controller = self.active_controller()
        except HarnessError:
            pass
        for n in self.nodes:
            mark = "  (active controller)" if n.id == controller else ""
            lines.append(f"{n.id:>6}  {n.role:<10}  {n.state():<8}  {n.ip:<15}  {n.name}{mark}")
        lines += self.layer_rows()
        try:
            topics = self.topics()
        except Exception as e:
            lines.append(f"\ntopics: cannot list them ({e})")
            return "\n".join(lines)
        lines.append("")
        lines.append(f"{'TOPIC':<20} {'PARTITION':>9}  {'LEADER':>6}  {'ISR':<12}  REPLICAS" if topics
                     else "no topics")
        for t in topics:
            for s in self.describe(t):
                lines.append(f"{t:<20} {s.partition:>9}  {s.leader if s.leader is not None else '-':>6}  "
                             f"{','.join(map(str, s.isr)):<12}  {','.join(map(str, s.replicas))}")
        return "\n".join(lines)

    def layer_rows(self) -> list[str]:
        """Status rows for what sits between the nodes (the link proxy): none here."""
        return []


UNKNOWN_TOPIC_GRACE_S = 5.0      # how long a topic may be unknown to the broker asked before it counts as absent


class _NotKnownHere(Exception):
    """The broker that answered does not know the topic (yet)."""
