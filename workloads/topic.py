"""The partitions of the topic under test, asked with patience: right after a topic is created, or while a broker
is down, the broker that answers a metadata request may not know the topic yet."""
from __future__ import annotations

import time

from harness.errors import UsageError


def partitions_of(cluster, topic: str, timeout: float = 20) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return [s.partition for s in cluster.describe(topic, timeout=min(5.0, timeout))]
        except Exception as e:
            if time.monotonic() >= deadline:
                raise UsageError(f"topic {topic}: cannot read its partitions ({e})",
                                 "create the topic first (cluster.create_topic) on a running cluster") from None
            time.sleep(0.5)
