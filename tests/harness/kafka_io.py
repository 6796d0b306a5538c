"""Plain produce / consume helpers for cluster tests (the real workload lives in workloads/)."""
from __future__ import annotations

from confluent_kafka import Consumer, Producer, TopicPartition


def produce(bootstrap: str, topic: str, values: list[str], partition: int = 0, acks: str = "all",
            timeout: float = 30) -> list[tuple[str, int | None, str | None]]:
    """Send values; return (value, offset, error name) per delivery report."""
    reports: list[tuple[str, int | None, str | None]] = []

    def on_delivery(err, msg):
        reports.append((msg.value().decode(), None if err else msg.offset(), err.name() if err else None))

    p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "message.timeout.ms": int(timeout * 1000),
                  "request.timeout.ms": 5000, "log_level": 0})
    for v in values:
        p.produce(topic, v.encode(), partition=partition, on_delivery=on_delivery)
    p.flush(timeout + 5)
    return reports


def consume_all(bootstrap: str, topic: str, partition: int = 0, timeout: float = 30) -> list[str]:
    """Every value in the partition, from the beginning to the current end."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "test-read", "enable.auto.commit": False,
                  "isolation.level": "read_uncommitted", "log_level": 0})
    try:
        _, end = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        c.assign([TopicPartition(topic, partition, 0)])
        out: list[str] = []
        import time
        deadline = time.monotonic() + timeout
        while len(out) < end and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            out.append(m.value().decode())
        return out
    finally:
        c.close()
