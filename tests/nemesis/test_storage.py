"""Storage faults against real brokers on the power-loss layer: each does what it says, and heal undoes it.

One cluster (three brokers, one controller) with `power_loss_fs`, for this module only; it is removed at the end
and must leave no mount, lazyfs process or directory behind.
"""
from __future__ import annotations

import os
import threading
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_chaos.base.waiting import wait_until
from kafka_chaos.cluster import powerfs
from kafka_chaos.nemesis import registry
from kafka_chaos.nemesis.control import Nemesis
from kafka_chaos.nemesis.events import EventLog
from kafka_chaos.nemesis.registry import FaultArgs
from tests.cluster.test_lazyfs import _lazyfs_processes
from tests.conftest import fast_cluster_config

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def layered():
    from kafka_chaos.cluster.kafka_cluster import KafkaCluster

    c = KafkaCluster(fast_cluster_config(f"tstore{os.getpid()}", min_insync_replicas=1, power_loss_fs=True)).up()
    run_dir = powerfs.root() / c.run_id
    mounts = [str(c.power_layer(b.id).mnt) for b in c.brokers]
    yield c
    c.down()
    assert not run_dir.exists(), f"{run_dir} left behind"
    assert not set(mounts) & set(powerfs.lazyfs_mounts()), "lazyfs mounts left behind"
    assert not any(_lazyfs_processes(powerfs.Path(m)) for m in mounts), "lazyfs processes left behind"


def _produce(cluster, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    failed = []
    for i in range(n):
        p.produce(topic, value=f"{topic}-{i}".encode(), on_delivery=lambda err, _m: err and failed.append(err))
    assert p.flush(60) == 0 and not failed, failed


def _read_all(cluster, topic: str) -> list[str]:
    """Every record of topic/0 from the start to its end offset now."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=15)
        c.assign([TopicPartition(topic, 0, low)])
        out: list[str] = []
        while len(out) < high - low:
            m = c.poll(5)
            if m is not None and not m.error():
                out.append(m.value().decode())
        return out
    finally:
        c.close()


def _healthy(cluster, topic: str) -> bool:
    try:
        return cluster.partitions_healthy(topic)
    except Exception:                  # "unknown topic" from a broker still replaying the metadata log
        return False


def _registered(cluster, broker: int) -> bool:
    try:
        return broker in cluster.admin().list_topics(timeout=3).brokers
    except Exception:
        return False


def test_power_loss_drops_what_was_not_fsynced_and_heal_powers_the_broker_on(layered):
    """Two topics written with acks=all: one under Kafka's default flush (page cache only), one with
    flush.messages=1 (fsync per write). After the power loss the first is empty, the second whole."""
    lazy, synced = f"lazy-{uuid.uuid4().hex[:6]}", f"synced-{uuid.uuid4().hex[:6]}"
    layered.create_topic(lazy, 1, 3)
    layered.create_topic(synced, 1, 3, configs={"flush.messages": "1"})
    _produce(layered, lazy, 300)
    _produce(layered, synced, 300)
    assert len(_read_all(layered, lazy)) == 300
    events = EventLog()
    nem = Nemesis(layered, record=events)
    fault = nem.start(registry.build("power-loss-all"))
    ids = [b.id for b in layered.brokers]
    assert all(b.state() == "exited" for b in layered.brokers)
    assert events[-1].details["effect"] == "power_loss" and events[-1].nodes == ids
    for b in ids:
        layer = layered.power_layer(b)
        assert layer.mounted()                                     # a fresh disk, ready for power-on
        segment = next((layer.disk / f"{lazy}-0").glob("*.log"))
        assert segment.stat().st_size == 0                         # the acked writes never reached any disk
    nem.heal(fault)
    assert not fault.active and events[-1].action == "heal"
    assert all(b.state() == "running" for b in layered.brokers)
    wait_until(lambda: all(_registered(layered, b) for b in ids), 120, "brokers did not come back after power-on")
    wait_until(lambda: _healthy(layered, synced) and _healthy(layered, lazy), 60,
               "partitions without a leader after power-on")
    assert _read_all(layered, lazy) == []                          # dropped, exactly the unsynced data
    assert _read_all(layered, synced) == [f"{synced}-{i}" for i in range(300)]   # fsync'ed: all there
    _produce(layered, lazy, 10)                                    # and the broker takes writes again
    assert len(_read_all(layered, lazy)) == 10
    layered.delete_topics([lazy, synced])


class _Writer(threading.Thread):
    """Writes to `topic` until stopped (acks=1), so that every broker keeps appending to its log."""

    def __init__(self, cluster, topic: str):
        super().__init__(daemon=True)
        self.cluster, self.topic, self.halt = cluster, topic, threading.Event()

    def run(self):
        p = Producer({"bootstrap.servers": self.cluster.bootstrap_servers, "acks": "1", "linger.ms": 20,
                      "message.timeout.ms": 5000})
        i = 0
        while not self.halt.is_set():
            try:
                p.produce(self.topic, value=b"x" * 200)
            except BufferError:
                pass
            p.poll(0.001 if i % 50 else 0.05)
            i += 1
        p.flush(10)


def test_disk_full_takes_the_log_dir_offline_and_heal_frees_it_and_restarts_the_broker(layered):
    topic = f"full-{uuid.uuid4().hex[:6]}"
    layered.create_topic(topic, 3, 3)
    target = 2
    writer = _Writer(layered, topic)
    writer.start()
    events = EventLog()
    nem = Nemesis(layered, record=events)
    try:
        fault = nem.start(registry.build("disk-full", FaultArgs(targets=(target,))))
    finally:
        writer.halt.set()
        writer.join()
    node, layer = layered.node(target), layered.power_layer(target)
    assert events[-1].details.items() >= {"effect": "kill", "cause": "disk_full", "halted": True}.items()
    assert node.state() == "exited"                                 # Kafka halted: its only log dir went offline
    log = node.logs(tail=600)
    # Whichever write hits the full disk first takes the broker down: a partition's log (LogManager.
    # handleLogDirFailure: "all log dirs ... have failed", Exit.halt) or the metadata log in the raft IO thread
    # (ProcessTerminatingFaultHandler: "Encountered fatal fault").
    assert "No space left on device" in log, log[-3000:]
    assert "have failed" in log or "Encountered fatal fault" in log, log[-3000:]
    assert os.statvfs(layer.mnt).f_bavail == 0                      # the disk as df sees it: full
    nem.heal(fault)
    assert not layer.ballast.exists() and os.statvfs(layer.mnt).f_bavail > 0
    assert node.state() == "running"
    wait_until(lambda: _registered(layered, target) and _healthy(layered, topic), 120,
               "the broker did not rejoin every ISR after its disk was freed")
    layered.delete_topics([topic])


def _segment(cluster, broker: int, topic: str) -> bytes:
    return sorted((cluster.power_layer(broker).mnt / f"{topic}-0").glob("*.log"))[-1].read_bytes()


def test_a_damaged_follower_segment_is_repaired_by_recovery_and_replication(layered):
    topic = f"dmg-{uuid.uuid4().hex[:6]}"
    layered.create_topic(topic, 1, 3, configs={"min.insync.replicas": "2"})
    _produce(layered, topic, 2000)
    wait_until(lambda: _healthy(layered, topic), 60, "ISR not full before the damage")
    leader = layered.leader(topic, 0)
    follower = next(b.id for b in layered.brokers if b.id != leader)
    assert _segment(layered, follower, topic) == _segment(layered, leader, topic)   # replicas are byte-equal
    events = EventLog()
    nem = Nemesis(layered, record=events)
    fault = nem.start(registry.build("damage", FaultArgs(targets=(follower,), topic=topic, damage_file="segment",
                                                         damage_mode="flip", seed=3)))
    d = events[-1].details
    assert d["effect"] == "damage" and d["file"] == "segment" and layered.node(follower).state() == "exited"
    damaged = _segment(layered, follower, topic)
    assert damaged != _segment(layered, leader, topic) and len(damaged) == d["size"]
    nem.heal(fault)
    wait_until(lambda: _registered(layered, follower) and _healthy(layered, topic), 120,
               "the damaged follower did not rejoin the ISR")
    wait_until(lambda: _segment(layered, follower, topic) == _segment(layered, leader, topic), 60,
               "the damaged segment was not repaired")
    log = layered.node(follower).logs(tail=2000)
    assert "Corrupt" in log or "invalid" in log.lower(), "recovery did not notice the damage"
    assert len(_read_all(layered, topic)) == 2000
    layered.delete_topics([topic])
