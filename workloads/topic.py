"""The partitions of the topic under test, asked with patience: right after a topic is created, or while a broker
is down, the broker that answers a metadata request may not know the topic yet."""
from __future__ import annotations

from kafka_chaos.base.errors import UsageError
from kafka_chaos.base.waiting import retry_call


def partitions_of(cluster, topic: str, timeout: float = 20) -> list[int]:
    try:
        return retry_call(lambda: [s.partition for s in cluster.describe(topic, timeout=min(5.0, timeout))], timeout)
    except Exception as e:
        raise UsageError(f"topic {topic}: cannot read its partitions ({e})",
                         "create the topic first (cluster.create_topic) on a running cluster") from None
