"""A live consumer in a consumer group (subscribe mode): it commits offsets and leaves and rejoins the group.

Every consumer of the run joins one group and subscribes to the topic, so the group together reads it once and
rebalances while the faults run. Offsets are committed one of two ways:
- `auto`: librdkafka's auto commit (enable.auto.commit, every auto.commit.interval.ms) of the offsets it stored as
  it handed each record over (enable.auto.offset.store);
- `manual`: after each journal flush, a synchronous commit of the next offset of every record journaled, and again
  when partitions are revoked: a commit never covers a record not yet on disk.
A member is ready (the run's faults wait for every worker) once the group has given it its first assignment: on a
fresh cluster the group coordinator first creates __consumer_offsets, and a fault that lands before the group has
formed tests nothing of the group.
Each consumer leaves the group (close) and joins again every `rejoin_s` seconds, the first time after (1 + index)
half intervals, so the group rebalances repeatedly, faults or not. The group's own view is journaled beside the
reads (group-NAME.tsv, history/journal.py): each partition assigned (with the group's committed offset for it at that
moment), revoked, and each commit's outcome.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from kafka_chaos.history.journal import NULL, LineJournal, group_paths, reads_paths, write_sidecar
from kafka_chaos.workloads.client_logging import client_logging
from kafka_chaos.workloads.consumer import record_line
from kafka_chaos.workloads.worker import detach_from_ctrl_c, should_stop

log = logging.getLogger(__name__)

COMMIT_MODES = ("auto", "manual")


@dataclass(frozen=True)
class GroupConsumerSpec:
    index: int
    name: str
    bootstrap_servers: str
    topic: str
    journal_dir: str
    group_id: str
    commit: str = "manual"
    rejoin_s: float | None = 20.0       # None: never leave the group on purpose
    auto_commit_interval_ms: int = 1000
    flush_interval_s: float = 0.25
    batch: int = 500
    client_log: str | None = None
    ready_timeout_s: float = 45.0       # ready at the first assignment, or after this long without one
    client: str = "librdkafka"          # or "java": workloads/java/JavaGroupConsumer.java, the same journals
    classpath: str = ""                 # the compiled Java client's (client "java")


def group_config(spec: GroupConsumerSpec) -> dict:
    auto = spec.commit == "auto"
    return {"bootstrap.servers": spec.bootstrap_servers, "group.id": spec.group_id,
            "enable.auto.commit": auto, "enable.auto.offset.store": auto,
            "auto.commit.interval.ms": spec.auto_commit_interval_ms,
            "auto.offset.reset": "earliest", "isolation.level": "read_committed",
            "session.timeout.ms": 10000, "heartbeat.interval.ms": 1000}


class GroupConsumer:
    """One process's consumer, replaced on every rejoin; its journals outlive the clients."""

    def __init__(self, spec: GroupConsumerSpec):
        self.spec = spec
        reads, group = reads_paths(spec.journal_dir, spec.name), group_paths(spec.journal_dir, spec.name)
        write_sidecar(reads["sidecar"], {"kind": "reads", "consumer": spec.name, "phase": "live"})
        write_sidecar(group["sidecar"], {"kind": "group", "consumer": spec.name, "commit_mode": spec.commit})
        self.reads = LineJournal(reads["data"])
        self.group = LineJournal(group["data"])
        self.seq = 0
        self.pending: dict[int, int] = {}      # manual mode: partition -> next offset journaled, not committed
        self.consumer = None
        self.assigned_once = False             # the group has handed this member its first assignment

    # ---- the client and its callbacks ------------------------------------------------------------------------
    def join(self) -> None:
        from confluent_kafka import Consumer

        conf = group_config(self.spec) | client_logging(self.spec.client_log, f"consumer-{self.spec.name}")
        if self.spec.commit == "auto":
            conf["on_commit"] = self._on_commit
        self.consumer = Consumer(conf)
        self.consumer.subscribe([self.spec.topic], on_assign=self._on_assign, on_revoke=self._on_revoke)

    def leave(self) -> None:
        if self.consumer is None:
            return
        try:
            self.commit()
            self.consumer.close()       # auto mode: close commits the stored offsets (on_commit journals it)
        except Exception as e:          # a fault may be running: the group then times the member out
            log.debug("consumer %s: close: %s", self.spec.name, e)
        self.consumer = None
        self.group.flush()

    def _event(self, event: str, partition: int, offset, error) -> None:
        off = NULL if offset is None or offset < 0 else str(offset)
        self.group.lines.append(f"{event}\t{partition}\t{off}\t{NULL if error is None else error}\t"
                                f"{time.time_ns()}\n")

    def _on_assign(self, consumer, partitions) -> None:
        self.assigned_once = True
        try:
            committed = {tp.partition: tp.offset for tp in consumer.committed(partitions, timeout=5)}
            error = None
        except Exception as e:
            committed, error = {}, type(e).__name__
        for tp in partitions:
            self._event("assigned", tp.partition, committed.get(tp.partition), error)
        self.group.flush()

    def _on_revoke(self, consumer, partitions) -> None:
        self.commit()
        for tp in partitions:
            self.pending.pop(tp.partition, None)
            self._event("revoked", tp.partition, None, None)
        self.group.flush()

    def _on_commit(self, err, partitions) -> None:
        for tp in partitions:
            e = err or tp.error
            self._event("commit", tp.partition, tp.offset, None if e is None else e.name())

    def commit(self) -> None:
        """Manual mode: commit, synchronously, the next offset of every record journaled (flushed first)."""
        if self.spec.commit != "manual" or not self.pending or self.consumer is None:
            return
        from confluent_kafka import KafkaException, TopicPartition

        self.reads.flush()
        offsets = [TopicPartition(self.spec.topic, p, o) for p, o in self.pending.items()]
        try:
            done = self.consumer.commit(offsets=offsets, asynchronous=False) or []
            for tp in done:
                self._event("commit", tp.partition, tp.offset, None if tp.error is None else tp.error.name())
        except KafkaException as e:
            for tp in offsets:
                self._event("commit", tp.partition, tp.offset, e.args[0].name())
        self.pending.clear()

    # ---- the loop --------------------------------------------------------------------------------------------
    def run(self, stop_event, ready_event, counters, parent_pid: int) -> None:
        spec = self.spec
        self.join()
        tick_ns = int(spec.flush_interval_s * 1e9)
        rejoin_ns = int(spec.rejoin_s * 1e9) if spec.rejoin_s else None
        now = time.time_ns()
        next_tick = now + tick_ns
        # the first leave half an interval in (the group formed before the run), staggered by half intervals
        next_rejoin = now + (1 + spec.index) * rejoin_ns // 2 if rejoin_ns else None
        ready_by = now + int(spec.ready_timeout_s * 1e9)
        try:
            while True:
                msgs = self.consumer.consume(spec.batch, min(0.1, spec.flush_interval_s))
                t = time.time_ns()
                if not ready_event.is_set() and (self.assigned_once or t >= ready_by):
                    ready_event.set()           # the faults start once the group has formed (or it took too long)
                for m in msgs:
                    if m.error() is None:
                        self.reads.lines.append(record_line(self.seq, m, t))
                        self.seq += 1
                        self.pending[m.partition()] = m.offset() + 1
                if t >= next_tick:
                    self.reads.flush()
                    self.commit()
                    self.group.flush()
                    counters[spec.index] = self.seq
                    if should_stop(stop_event, parent_pid):
                        break
                    next_tick = t + tick_ns
                if next_rejoin and t >= next_rejoin:
                    self.leave()
                    self.join()
                    next_rejoin = t + rejoin_ns
        finally:
            self.leave()
            self.reads.close()
            self.group.close()
            counters[spec.index] = self.seq


def run_group_consumer(spec: GroupConsumerSpec, stop_event, ready_event, counters, parent_pid: int) -> None:
    """Process entry point (the signature of workloads.consumer.run_consumer); a Java member's wrapper for
    client "java"."""
    if spec.client == "java":
        from kafka_chaos.workloads.java_client import run_java_group_consumer
        return run_java_group_consumer(spec, stop_event, ready_event, counters, parent_pid)
    detach_from_ctrl_c()
    GroupConsumer(spec).run(stop_event, ready_event, counters, parent_pid)
