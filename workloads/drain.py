"""The final drain: once the cluster is healthy again, read every partition from the beginning to its end.

The end of each partition is snapshotted first; a partition is done when the consumer's position reaches it.
Positions, not counts: transaction markers and aborted records leave offset gaps that no record fills.

The end is the high watermark (a read_uncommitted ListOffsets), never the last stable offset: the drain reads
read_committed, and a read_committed consumer's own end-offset query answers the LSO (librdkafka's ListOffsets takes
the consumer's isolation.level), so a partition stuck behind an open transaction would look read to its end while
every committed record above the LSO went unread (a real cascade-kill run judged those `lost`). A partition whose
read_committed position rests below its high watermark for `lso_wait_s` (the transactional workload passes
transaction.timeout.ms plus the coordinator's abort interval, checkers/lso.py) is given up: `stuck` records where it
stopped, and it counts as incomplete (checkers/completeness.py), with the open transactions' producers the brokers
name (`name_open`, DescribeProducers) when the caller can ask.
"""
from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field

from kafka_chaos.base.waiting import WaitTimeout, retry_call
from kafka_chaos.history.client_log import release_client_logger
from kafka_chaos.history.journal import LineJournal, reads_paths, write_sidecar
from kafka_chaos.workloads.client_logging import client_logging
from kafka_chaos.workloads.consumer import consumer_config, record_line
from kafka_chaos.workloads.topic import partitions_of

log = logging.getLogger(__name__)


@dataclass
class DrainResult:
    healthy: bool                      # the cluster was healthy before the drain began
    ends: dict[int, int]               # partition -> end offset snapshot
    positions: dict[int, int]          # partition -> position reached
    records: int = 0
    seconds: float = 0.0
    incomplete: list[int] = field(default_factory=list)   # partitions not read to their end
    stuck: dict[int, dict] = field(default_factory=dict)  # partition -> {"lso", "hw", "open"}: stopped below the HW

    @property
    def complete(self) -> bool:
        return not self.incomplete


def final_drain(cluster, topic: str, journal_dir, *, healthy_timeout_s: float = 120, read_timeout_s: float = 300,
                name: str = "final", flush_interval_s: float = 0.25, client_log: str | None = None,
                lso_wait_s: float | None = None, name_open=None) -> DrainResult:
    """Wait (bounded) for every partition to have a leader and a full ISR, then read all of it into the journal.
    lso_wait_s: how long a position may rest below the high watermark at the end of what is readable (None: the
    read timeout); name_open(partitions) -> {partition: [open transaction, ...]} for the partitions given up."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition


    healthy = True
    try:
        cluster.wait_healthy(topic, timeout=healthy_timeout_s)
    except WaitTimeout as e:
        healthy = False
        log.warning("final drain: cluster not healthy after %.0f s, reading what is readable: %s",
                    healthy_timeout_s, e)
    started = time.monotonic()
    partitions = partitions_of(cluster, topic)
    paths = reads_paths(journal_dir, name)
    write_sidecar(paths["sidecar"], {"kind": "reads", "consumer": name, "phase": "final"})
    journal = LineJournal(paths["data"])
    consumer = Consumer(consumer_config(cluster.bootstrap_servers, f"kafka-chaos-drain-{uuid.uuid4().hex[:8]}")
                        | client_logging(client_log, f"drain-{name}"))
    ends, positions, seq, resting = {}, {}, 0, _Resting()
    try:
        hw = _high_watermarks(cluster, topic)
        for p in partitions:
            low, ends[p] = _watermarks(consumer, topic, p)
            ends[p] = max(ends[p], hw.get(p, 0))
            positions[p] = low if ends[p] <= low else -1
        todo = {p for p in partitions if ends[p] > max(positions[p], 0)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in todo])
        deadline = started + read_timeout_s
        append, next_flush = journal.lines.append, time.monotonic() + flush_interval_s
        while todo and time.monotonic() < deadline:
            msgs = consumer.consume(1000, 0.5)
            t = time.time_ns()
            eof = set()
            for m in msgs:
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        eof.add(m.partition())
                    else:
                        log.debug("final drain: %s", err)
                    continue
                append(record_line(seq, m, t))
                seq += 1
                positions[m.partition()] = m.offset() + 1
            for p in eof & todo:        # at the end of what's there: the position says whether that's the end
                positions[p] = max(positions[p], consumer.position([TopicPartition(topic, p)])[0].offset)
                resting.note(p, positions[p], ends[p])
            todo = {p for p in todo if positions[p] < ends[p]} - resting.given_up(positions, lso_wait_s)
            if time.monotonic() >= next_flush:
                journal.flush()
                next_flush = time.monotonic() + flush_interval_s
    finally:
        journal.close()
        consumer.close()
        release_client_logger(f"drain-{name}")
    result = DrainResult(healthy=healthy, ends=ends, positions={p: max(v, 0) for p, v in positions.items()},
                         records=seq, seconds=time.monotonic() - started,
                         incomplete=sorted(p for p in partitions if positions[p] < ends[p]))
    result.stuck = resting.stuck(result.incomplete, positions, ends)
    _name_open(result.stuck, name_open)
    if result.incomplete:
        log.warning("final drain: partitions %s not read to their end in %.0f s", result.incomplete, read_timeout_s)
    return result


class _Resting:
    """Partitions whose read_committed position rests at the end of what is readable, below the high watermark."""

    def __init__(self):
        self.since: dict[int, tuple[int, float, int]] = {}     # partition -> (position, since when, wall ns)

    def note(self, p: int, position: int, end: int) -> None:
        if position < end and self.since.get(p, (None,))[0] != position:
            self.since[p] = (position, time.monotonic(), time.time_ns())

    def _resting(self, p: int, positions: dict[int, int]) -> bool:
        return p in self.since and self.since[p][0] == positions[p]

    def given_up(self, positions: dict[int, int], wait_s: float | None) -> set[int]:
        if wait_s is None:
            return set()
        return {p for p in self.since if self._resting(p, positions) and time.monotonic() - self.since[p][1] > wait_s}

    def stuck(self, incomplete: list[int], positions: dict[int, int], ends: dict[int, int]) -> dict[int, dict]:
        """partition -> where it rested and from when to when (wall clock ns): checkers/lso.py extends the
        sampled stretch of that LSO through the drain."""
        now = time.time_ns()
        return {p: {"lso": positions[p], "hw": ends[p], "since_ns": self.since[p][2], "until_ns": now, "open": []}
                for p in incomplete if self._resting(p, positions)}


def _name_open(stuck: dict[int, dict], name_open) -> None:
    if not stuck:
        return
    named = name_open(sorted(stuck)) if name_open is not None else {}
    for p, entry in stuck.items():
        entry["open"] = named.get(p, [])
    log.warning("final drain: partitions %s rest at their last stable offset below the high watermark: %s",
                sorted(stuck), stuck)


def _high_watermarks(cluster, topic: str) -> dict[int, int]:
    """Each partition's high watermark (read_uncommitted); empty if the admin client cannot say (the consumer's
    own ends are used then)."""
    try:
        return retry_call(lambda: cluster.high_watermarks(topic, timeout=10), 20, errors=Exception)
    except Exception as e:          # noqa: BLE001 - a fault may have left no leader; the consumer's ends remain
        log.warning("final drain: high watermarks of %s not read (%s): ends are the consumer's", topic, e)
        return {}


def _watermarks(consumer, topic: str, partition: int, timeout_s: float = 60) -> tuple[int, int]:
    """(low, high) offsets, retried: just after a restart the leader can move between metadata and the request
    (NOT_LEADER_FOR_PARTITION, LEADER_NOT_AVAILABLE), which is no reason to give up the drain."""
    from confluent_kafka import KafkaException, TopicPartition

    def note(e: BaseException) -> None:
        log.info("final drain: end offset of partition %d not yet readable (%s); retrying", partition,
                 e.args[0].name() if getattr(e, "args", None) else e)

    return retry_call(lambda: consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10),
                      timeout_s, errors=KafkaException, on_retry=note)
