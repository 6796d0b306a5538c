"""Reassignment under fire: move one partition's replicas to another set of brokers, and back on heal.

Kafka's Admin API does it (alterPartitionReassignments, KIP-455); librdkafka, hence confluent-kafka, lacks the call,
so Reassign.java, next to this module, makes it with Kafka's own Java client inside a running broker's container
(the image has kafka-clients and the JDK's compiler module, though no javac launcher: the class is compiled once
per container, by its hash, with `java -m jdk.compiler/...Main`, as a JVM start costs seconds on a busy box). The
controller then adds the new replicas, waits until they are in the ISR and only then drops the old ones
(PartitionReassignmentReplicas, PartitionChangeBuilder.completeReassignmentIfNeeded); the model mirrors that.
"""
from __future__ import annotations

import base64
import hashlib
import logging
import random
from pathlib import Path

from kafka_chaos.base.errors import HarnessError
from kafka_chaos.base.waiting import wait_until
from kafka_chaos.cluster.config import BROKER_PORT
from kafka_chaos.nemesis.base import Fault, FaultError, _partition_state

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("Reassign.java")


def move(cluster, topic: str, partition: int, replicas: list[int]) -> None:
    """Ask the controller to move topic/partition to `replicas` (the first is the preferred leader)."""
    running = [b for b in sorted(cluster.brokers, key=lambda n: n.id) if b.is_running()]
    if not running:
        raise FaultError("no broker is running to run the reassignment from", "heal the cluster first")
    bootstrap = ",".join(f"{b.ip}:{BROKER_PORT}" for b in running)
    source = SOURCE.read_bytes()
    src, tag = base64.b64encode(source).decode(), hashlib.sha256(source).hexdigest()[:12]
    d, jvm = f"/tmp/kc-{tag}", "java -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    script = (f"if [ ! -f {d}/Reassign.class ]; then mkdir -p {d} && echo {src} | base64 -d > {d}/Reassign.java && "
              f"{jvm} -m jdk.compiler/com.sun.tools.javac.Main -nowarn "
              f"-cp \"$(ls /opt/kafka/libs/kafka-clients-*.jar)\" -d {d} "
              f"{d}/Reassign.java; fi && {jvm} -cp '{d}:/opt/kafka/libs/*' Reassign {bootstrap} {topic} {partition} "
              + ",".join(str(r) for r in replicas))
    rc, out = running[0].exec(["bash", "-c", script], check=False)
    if rc != 0:
        raise FaultError(f"reassigning {topic}/{partition} to {replicas} failed ({rc}): {out.strip()[-600:]}",
                         "check that every target broker is registered (kafka-chaos cluster status)")


def target_replicas(replicas: list[int], brokers: list[int], seed: int) -> list[int]:
    """`replicas` with one of them (drawn by seed, the leader too) swapped for a broker outside the set, in place."""
    outside = sorted(set(brokers) - set(replicas))
    if not outside:
        raise FaultError(f"every broker ({brokers}) already holds a replica: nowhere to move one to",
                         "run with more brokers than the replication factor, e.g. --brokers 4")
    rng = random.Random(seed)
    drop, add = rng.choice(replicas), rng.choice(outside)
    return [add if r == drop else r for r in replicas]


class PartitionReassign(Fault):
    """Move TOPIC/PARTITION's replica set (one replica swapped for another broker); heal moves it back and waits
    (up to `settle_s`) until the controller has completed the move back."""

    name = "partition-reassign"

    def __init__(self, topic: str, partition: int = 0, seed: int = 0, settle_s: float = 60, name: str | None = None):
        super().__init__(name)
        self.topic, self.partition, self.seed, self.settle_s = topic, partition, seed, settle_s

    def _start(self, cluster) -> None:
        before = list(_partition_state(cluster, self.topic, self.partition).replicas)
        after = target_replicas(before, [b.id for b in cluster.brokers], self.seed)
        move(cluster, self.topic, self.partition, after)
        self._applied(sorted(set(before) | set(after)),
                      {"effect": "reassign", "topic": self.topic, "partition": self.partition, "from": before,
                       "to": after, "target": "partition", "seed": self.seed},
                      lambda: self._back(cluster, before))

    def _back(self, cluster, before: list[int]) -> None:
        move(cluster, self.topic, self.partition, before)
        try:
            wait_until(lambda: self._replicas(cluster) == before, self.settle_s,
                       f"{self.topic}/{self.partition} not back on {before} after {self.settle_s:.0f} s")
        except HarnessError as e:      # the move back is asked for; the controller completes it once caught up
            log.warning("partition-reassign heal: %s", e)

    def _replicas(self, cluster) -> list[int] | None:
        try:
            return list(_partition_state(cluster, self.topic, self.partition, settle_s=1).replicas)
        except HarnessError:
            return None
