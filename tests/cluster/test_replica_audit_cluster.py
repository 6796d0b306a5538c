"""The replica audit on a real cluster: replicas a real broker wrote audit clean; one record rewritten in one
follower's segment while its broker is stopped is found as `replica_divergence`, naming that offset and replica.

The injection rewrites the record consistently: the same length (offsets, positions and the indexes stay valid) and
the batch's CRC-32C recomputed. A flipped byte with the old CRC would be caught by Kafka itself when it validates
the batch (an unclean start's recovery truncates there and the follower fetches the record back from the leader),
which proves Kafka's recovery, not the audit. Rewritten and stopped cleanly (SIGTERM: a clean-shutdown marker, so
no recovery pass), the broker loads the segment as it is, the follower's leader epoch and end offset agree with the
leader's (no truncation, KIP-101), and it rejoins the ISR holding a record the leader never had: what the audit
exists to catch, and what no consumer of the leader would ever see.
"""
from __future__ import annotations

import time

from confluent_kafka import Producer

from kafka_chaos.checkers import replica_audit as checker
from kafka_chaos.cluster.replica_files import LOG_DIR, replica_files, write_file
from kafka_chaos.harness.replica_audit import run_audit
from kafka_chaos.history import record_batch as rb


def _produce(cluster, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5})
    for i in range(n):
        p.produce(topic, value=f"v-{i:05d}".encode(), partition=i % 3)
    assert p.flush(30) == 0


def _isr_whole(cluster, topic: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = cluster.describe(topic)
        if all(s.leader is not None and set(s.isr) == set(s.replicas) for s in states):
            return
        time.sleep(0.5)
    raise AssertionError(f"ISR not whole after {timeout} s: {cluster.describe(topic)}")


def _rewrite_one_value(node, topic: str, offset: int) -> tuple[bytes, bytes]:
    """Change one byte of the value at `offset` in the node's segment of partition 0, CRC recomputed."""
    files = replica_files(node, topic, 0)["files"]
    name = min(n for n in files if n.endswith(".log"))
    seg = bytearray(files[name])
    for b in rb.read_batches(bytes(seg)):
        for r in b.records or []:
            if b.base_offset + r.offset_delta == offset:
                at = bytes(seg).index(r.value, b.position)
                seg[at + len(r.value) - 1] ^= 0x01           # the last digit: v-00042 -> v-00043
                rb.rewrite_crc(seg, b.position)
                write_file(node, f"{LOG_DIR}/{topic}-0/{name}", bytes(seg))
                return r.value, bytes(seg[at:at + len(r.value)])
    raise AssertionError(f"offset {offset} not in {name}")


def test_clean_replicas_audit_clean_and_one_rewritten_record_is_a_divergence(cluster, topic, tmp_path):
    _produce(cluster, topic, 600)
    _isr_whole(cluster, topic)
    clean = tmp_path / "clean"
    (clean / "history").mkdir(parents=True)
    status = run_audit(cluster, clean, topic, wait_s=30)
    assert status["ran"] and status["isr_whole"] and status["replicas"] == 9 and status["records"] == 1800
    assert len(checker.find(*checker.read(clean))) == 0

    state = cluster.partition(topic, 0)
    follower = cluster.node(next(b for b in state.replicas if b != state.leader))
    follower.stop()
    was, now = _rewrite_one_value(follower, topic, 42)
    follower.start()
    _isr_whole(cluster, topic, timeout=90)

    injected = tmp_path / "injected"
    (injected / "history").mkdir(parents=True)
    assert run_audit(cluster, injected, topic, wait_s=30)["isr_whole"]
    found = checker.find(*checker.read(injected))
    diverged = found[found["kind"] == "replica_divergence"]
    assert len(diverged) == 1, found["reason"].tolist()
    row = diverged.iloc[0]
    assert (row["partition"], row["offset"], row["classification"]) == (0, 42, "violation")
    assert f"broker {follower.id} (in the ISR)" in row["reason"] and "offset 42, below its high watermark" in \
        row["reason"]
    records, _ = checker.read(injected)
    held = records[(records["partition"] == 0) & (records["offset"] == 42)].set_index("broker")["value"]
    assert held[follower.id] == now.decode() and held[state.leader] == was.decode()
