"""The cluster-state sampler: a thread that journals, every interval, each partition's leader, ISR and high watermark
(and for a transactional workload its last stable offset) and the active controller, so the checkers can replay
what the cluster believed while faults were on.

A sample that cannot describe the topic (no broker answers) is skipped: no row is better than a made-up one. A
high watermark or controller that cannot be read is null in that sample. ELR is null: confluent-kafka's
describe_topics does not expose it.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from kafka_chaos.base.waiting import WaitTimeout, wait_until

log = logging.getLogger(__name__)
CONTROLLER_RETRY_S = 0.5        # a read or two more (one `docker exec` takes 0.1-0.3 s), not a missed sample


def sample_rows(cluster, topic: str, timeout: float = 3.0, lso: bool = False) -> list[dict]:
    """One sample: a row per partition (raises if the topic cannot be described). `lso`: each row also holds the
    partition's last stable offset (`last_stable_offset`, lso.parquet), read right after the high watermark."""
    states = cluster.describe(topic, timeout=timeout)
    t_ns = time.time_ns()
    try:
        hw = cluster.high_watermarks(topic, timeout=timeout)
    except Exception as e:      # a partition without leader: no watermark this time
        log.debug("sampler: high watermarks: %s", e)
        hw = {}
    stable = {}
    if lso:
        try:
            stable = cluster.high_watermarks(topic, timeout=timeout, stable=True)
        except Exception as e:
            log.debug("sampler: last stable offsets: %s", e)
    try:                        # read through `docker exec`, which a busy engine sometimes fails once
        controller = wait_until(cluster.active_controller, CONTROLLER_RETRY_S, "no active controller", interval=0.05)
    except WaitTimeout as e:
        log.debug("sampler: active controller: %s", e)
        controller = None
    rows = [{"t_ns": t_ns, "partition": s.partition, "leader": s.leader, "isr": list(s.isr), "elr": None,
             "high_watermark": _offset(hw.get(s.partition)), "controller": controller} for s in states]
    if lso:
        for r in rows:
            r["last_stable_offset"] = _offset(stable.get(r["partition"]))
    return rows


class ClusterSampler:
    """Start, stop; each sample goes to `record(rows)` (HistoryWriter.record_cluster_sample)."""

    def __init__(self, cluster, topic: str, record: Callable[[list[dict]], None], interval_s: float = 0.5,
                 lso: bool = False):
        self.cluster, self.topic, self.record, self.interval_s, self.lso = cluster, topic, record, interval_s, lso
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cluster-sampler", daemon=True)

    def start(self) -> "ClusterSampler":
        self._thread.start()
        return self

    def stop(self, timeout: float = 10) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                self.record(sample_rows(self.cluster, self.topic, timeout=max(1.0, self.interval_s * 4), lso=self.lso))
                self.samples += 1
            except Exception as e:
                log.debug("sampler: sample skipped: %s", e)
            next_at += self.interval_s
            delay = next_at - time.monotonic()
            if delay < 0:               # a slow sample (brokers down): start the next one now, not a burst
                next_at, delay = time.monotonic(), 0
            self._stop.wait(delay)


def _offset(value):
    """librdkafka answers OFFSET_INVALID (-1001) for a watermark it could not read: that is no watermark."""
    return value if value is not None and value >= 0 else None
