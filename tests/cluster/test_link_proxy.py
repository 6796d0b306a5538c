"""Slow links through the link proxy (Toxiproxy) on real brokers: a latency toxic on a client link adds its delay
to produce round trips and heal takes it away again; a bandwidth cap on a follower's fetch links drives it out of
the ISR and heal lets it back; the proxy goes with the cluster, after `down` and after kill -9 of its owner."""
from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid

import pytest
from confluent_kafka import Producer

import docker
from kafka_chaos.base.waiting import wait_until
from kafka_chaos.cluster import linkproxy
from kafka_chaos.cluster.kafka_cluster import LABEL_CLUSTER, KafkaCluster
from kafka_chaos.nemesis import registry
from kafka_chaos.nemesis.control import Nemesis, sweep
from kafka_chaos.nemesis.events import EventLog
from kafka_chaos.nemesis.registry import FaultArgs
from tests.conftest import fast_cluster_config

pytestmark = pytest.mark.cluster

DELAY_MS = 400


def proxy_containers(name: str) -> list:
    return docker.from_env().containers.list(
        all=True, ignore_removed=True,
        filters={"label": [f"{LABEL_CLUSTER}={name}", f"kafka-chaos.role={linkproxy.ROLE}"]})


def leftovers(name: str) -> tuple[list, list]:
    client = docker.from_env()
    return (client.containers.list(all=True, ignore_removed=True, filters={"label": f"{LABEL_CLUSTER}={name}"}),
            client.networks.list(filters={"label": f"{LABEL_CLUSTER}={name}"}))


@pytest.fixture(scope="module")
def proxied():
    """A 3-broker cluster whose client and replication links go through the link proxy."""
    c = KafkaCluster(fast_cluster_config(f"lp{os.getpid()}", link_proxy=True))
    c.up()
    yield c
    c.down()


@pytest.fixture
def topic(proxied):
    name = f"t-{uuid.uuid4().hex[:8]}"
    proxied.create_topic(name, partitions=1, replication_factor=3, configs={"min.insync.replicas": "1"})
    wait_until(lambda: proxied.partition(name, 0).leader is not None, 30, f"{name} has no leader")
    yield name
    sweep(proxied)


def write_ms(producer: Producer, topic: str) -> float:
    t = time.monotonic()
    producer.produce(topic, b"x" * 100, partition=0)
    producer.flush(30)
    return (time.monotonic() - t) * 1000


def added_ms(proxied_producer: Producer, direct_producer: Producer, topic: str, n: int = 15) -> float:
    """How much longer an acks=1 write takes through the proxy than straight to the same leader: the median of n
    interleaved pairs, so the machine's load, which moves both alike, cancels out."""
    return statistics.median(write_ms(proxied_producer, topic) - write_ms(direct_producer, topic) for _ in range(n))


def test_a_latency_toxic_on_the_leaders_client_link_slows_writes_by_its_delay_and_heal_removes_it(proxied, topic):
    assert proxied.bootstrap_servers.startswith(proxied.proxy_ip)      # the workload's way in is the proxy
    leader = proxied.partition(topic, 0).leader
    through = Producer({"bootstrap.servers": proxied.bootstrap_servers, "acks": "1", "linger.ms": 0})
    direct = Producer({"bootstrap.servers": proxied.admin_bootstrap_servers, "acks": "1", "linger.ms": 0})
    added_ms(through, direct, topic, 3)                                     # connections made
    before = added_ms(through, direct, topic)
    events = EventLog()
    nem = Nemesis(proxied, record=events)
    fault = nem.start(registry.build("link-slow", FaultArgs(targets=(leader,), link="client", delay_ms=DELAY_MS,
                                                            jitter_ms=0)))
    toxics = proxied.link_proxy().all_toxics()
    assert [t["attributes"]["latency"] for t in toxics[linkproxy.client_proxy(leader)]] == [DELAY_MS]
    assert not any(t for p, t in toxics.items() if p != linkproxy.client_proxy(leader))
    slowed = added_ms(through, direct, topic)
    nem.heal(fault)
    after = added_ms(through, direct, topic)
    print(f"acks=1 write through the proxy minus straight to leader {leader}, median of 15 pairs: before "
          f"{before:.1f} ms, with a {DELAY_MS} ms toxic {slowed:.1f} ms, after heal {after:.1f} ms")
    assert slowed >= before + 0.7 * DELAY_MS
    assert after <= slowed - 0.7 * DELAY_MS
    assert not any(proxied.link_proxy().all_toxics().values())
    assert [e.details["links"] for e in events] == [[["client", leader]]] * 2
    assert nem.heal_all() == []


def test_a_bandwidth_cap_on_a_followers_fetch_links_drives_it_out_of_the_isr_and_heal_lets_it_back(proxied, topic):
    stop = threading.Event()

    def load():
        p = Producer({"bootstrap.servers": proxied.bootstrap_servers, "acks": "1", "linger.ms": 5})
        while not stop.is_set():
            for _ in range(200):
                try:
                    p.produce(topic, b"x" * 500, partition=0)
                except BufferError:
                    break
            p.poll(0.05)
        p.flush(10)

    writer = threading.Thread(target=load, daemon=True)
    writer.start()
    nem = Nemesis(proxied)
    try:
        fault = nem.start(registry.build("follower-link-bandwidth", FaultArgs(topic=topic, rate_kbps=8)))
        [follower] = fault.nodes
        leader = proxied.partition(topic, 0).leader
        assert fault.events[0].details["links"] == [[follower, b] for b in (1, 2, 3) if b != follower]
        assert linkproxy.replication_proxy(follower, leader) in {
            p for p, t in proxied.link_proxy().all_toxics().items() if t}
        wait_until(lambda: follower not in proxied.partition(topic, 0).isr, 60,
                   f"broker {follower} stayed in the ISR with its fetches capped at 8 KB/s")
        nem.heal(fault)
        assert not any(proxied.link_proxy().all_toxics().values())
        wait_until(lambda: follower in proxied.partition(topic, 0).isr, 90,
                   f"broker {follower} did not rejoin the ISR after the cap was lifted")
    finally:
        stop.set()
        writer.join(30)
        nem.heal_all()


def test_the_sweep_removes_a_toxic_a_crashed_run_left(proxied):
    proxied.link_proxy().add_toxic(linkproxy.client_proxy(1), "left-behind", "latency", "downstream",
                                   {"latency": 50})
    assert sweep(proxied) == []
    assert not any(proxied.link_proxy().all_toxics().values())


def test_cluster_status_shows_the_proxy_and_the_toxics_in_force(proxied):
    def row() -> str:
        return next(line for line in proxied.status().splitlines() if "link-proxy" in line)

    assert proxied.proxy_ip in row() and "running" in row() and row().endswith("toxics: none")
    link = linkproxy.client_proxy(1)
    proxied.link_proxy().add_toxic(link, "slow-b1", "latency", "downstream", {"latency": 50})
    try:
        assert f"toxics: {link} latency (slow-b1)" in row()
    finally:
        proxied.link_proxy().remove_toxic(link, "slow-b1")
    assert row().endswith("toxics: none")


def test_network_faults_refuse_a_proxied_cluster_where_their_cut_would_not_hold(proxied):
    from kafka_chaos.base.errors import UsageError

    events = EventLog()
    with pytest.raises(UsageError, match="link proxy's address"):
        Nemesis(proxied, record=events).start(registry.build("isolate", FaultArgs(targets=(1,))))
    assert list(events) == []


def test_cluster_down_removes_the_proxy(proxied):
    name = proxied.config.name
    assert len(proxy_containers(name)) == 1
    proxied.down()
    assert leftovers(name) == ([], [])


def test_the_proxy_goes_with_a_run_killed_with_sigkill():
    name = f"lpkill{os.getpid()}"
    code = (
        "import time; from cluster.kafka_cluster import KafkaCluster\n"
        "from tests.conftest import fast_cluster_config\n"
        f"c = KafkaCluster(fast_cluster_config({name!r}, brokers=1, min_insync_replicas=1, link_proxy=True)); "
        "c.up(timeout=300)\nprint('UP', c.link_proxy().version(), flush=True); time.sleep(600)\n")
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    try:
        assert owner.stdout.readline().startswith("UP")
        assert len(proxy_containers(name)) == 1
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    wait_until(lambda: leftovers(name) == ([], []), 60, "the reaper left the killed run's proxy or cluster behind")
