"""The producer worker: one spawned process, one librdkafka producer, one journal of every send.

Each send is journaled when produce() is called and again when its outcome is known (delivery report, or the
synchronous error of produce()). The value `"<process>-<seq>"` identifies the write in the whole run; the partition
is chosen round-robin (seq mod partitions) and the key names the partition, so sends spread evenly and every send
has a known partition, even one that failed before it was partitioned.

At stop: flush (up to the delivery timeout, so every in-flight send gets its real report), then purge what is
still left, then flush again, so every send has an outcome.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from kafka_chaos.history.journal import NULL, LineJournal, producer_paths, write_progress, write_sidecar
from kafka_chaos.workloads.client_logging import client_logging
from kafka_chaos.workloads.client_stats import StatsJournal
from kafka_chaos.workloads.outcomes import FAIL, INFO, OK, classify
from kafka_chaos.workloads.profile import ProducerProfile
from kafka_chaos.workloads.worker import detach_from_ctrl_c, should_stop

log = logging.getLogger(__name__)

# Layout of a producer's slots in the shared counters array.
INVOKED, SENT_OK, SENT_FAIL, SENT_INFO = range(4)
COUNTER_SLOTS = 4


@dataclass(frozen=True)
class ProducerSpec:
    """Everything a producer process needs; picklable, so it crosses the spawn boundary."""

    process: int
    profile: ProducerProfile
    bootstrap_servers: str
    topic: str
    partitions: int
    journal_dir: str
    flush_interval_s: float = 0.25
    batch: int = 256                    # sends per loop turn between polls
    max_outstanding: int = 50_000       # as-fast-as-possible mode: unacked sends before we wait
    stop_timeout_s: float | None = None  # final flush; None: the delivery timeout + 5 s
    client_overrides: tuple = ()        # extra librdkafka settings, as (key, value) pairs
    client_log: str | None = None       # results/<run_id>/logs/clients.log (None: librdkafka's lines are dropped)


def run_producer(spec: ProducerSpec, stop_event, ready_event, counters, parent_pid: int) -> None:
    """Process entry point."""
    detach_from_ctrl_c()
    ProducerWorker(spec, counters).run(stop_event, ready_event, parent_pid)


class ProducerWorker:
    def __init__(self, spec: ProducerSpec, counters):
        self.spec = spec
        self.profile = spec.profile
        self.counters = counters
        self.slot = spec.process * COUNTER_SLOTS
        paths = producer_paths(spec.journal_dir, spec.process)
        write_sidecar(paths["sidecar"], {"kind": "sends", "process": spec.process, "producer": spec.profile.name,
                                         "acks": spec.profile.acks, "idempotent": spec.profile.idempotent,
                                         "profile": spec.profile.to_meta()})
        self.invokes = LineJournal(paths["invoke"])
        self.completes = LineJournal(paths["complete"])
        self.progress_path = paths["progress"]
        self.stats = StatsJournal(LineJournal(paths["stats"]), spec.topic)   # the client's own view, once a second
        self.seq = 0
        self.outcomes = [0, 0, 0]     # ok, fail, info
        self.producer = self._new_producer()

    # ---- client ----------------------------------------------------------------------------------------------
    def _new_producer(self):
        from confluent_kafka import Producer

        return Producer(self._base_config() | {"on_delivery": self._delivery_callback()})

    def _base_config(self) -> dict:
        """The client's settings, without the delivery callback."""
        return self.profile.client_config() | {
            "bootstrap.servers": self.spec.bootstrap_servers,
            "queue.buffering.max.messages": max(100_000, self.spec.max_outstanding * 2),
        } | client_logging(self.spec.client_log, f"producer-{self.profile.name}",
                          idempotent=self.profile.idempotent) | self.stats.config() | dict(self.spec.client_overrides)

    def _delivery_callback(self):
        append = self.completes.lines.append
        outcomes = self.outcomes
        time_ns = time.time_ns
        single_attempt = self.profile.single_attempt

        def on_delivery(err, msg):
            t = time_ns()
            if err is None:
                offset = msg.offset()
                append(f"{msg.value().decode()}\tok\t{NULL}\t{msg.partition()}\t"
                       f"{NULL if offset is None else offset}\t{t}\n")
                outcomes[0] += 1
                return
            outcome = classify(err.code(), single_attempt)
            partition = msg.partition()
            append(f"{msg.value().decode()}\t{outcome}\t{err.name()}\t"
                   f"{NULL if partition is None or partition < 0 else partition}\t{NULL}\t{t}\n")
            outcomes[1 if outcome == FAIL else 2] += 1

        return on_delivery

    def _replace_after_fatal(self, error) -> None:
        """A fatal client error (e.g. idempotence state lost): settle what is outstanding, start a new client."""
        log.warning("producer %s: fatal client error %s: replacing the client", self.profile.name, error)
        old = self.producer
        old.purge()
        old.flush(5)
        self.producer = self._new_producer()

    # ---- main loop -------------------------------------------------------------------------------------------
    def run(self, stop_event, ready_event, parent_pid: int) -> None:
        from confluent_kafka import KafkaException

        ready_event.set()
        spec = self.spec
        tick_ns = int(spec.flush_interval_s * 1e9)
        time_ns = time.time_ns
        invoke = self.invokes.lines.append
        keys = [str(p) for p in range(spec.partitions)]
        topic, partitions, prefix = spec.topic, spec.partitions, f"{spec.process}-"
        seq = self.seq
        produce, pending = self.producer.produce, self.producer.__len__
        start = next_tick = time_ns()
        while True:
            now = time_ns()
            if now >= next_tick:
                self.seq = seq
                self._checkpoint()
                if should_stop(stop_event, parent_pid):
                    break
                next_tick = now + tick_ns
            n, start = self._how_many(now, start, seq, pending)
            for _ in range(n):
                partition = seq % partitions
                value = prefix + str(seq)
                t = time_ns()
                try:
                    produce(topic, value, keys[partition], partition)
                except BufferError:
                    self._synchronous_failure(value, keys[partition], partition, t, "_QUEUE_FULL")
                except KafkaException as e:
                    self._synchronous_failure(value, keys[partition], partition, t, e.args[0].name())
                else:
                    invoke(f"{value}\t{keys[partition]}\t{partition}\t{t}\n")
                seq += 1
            if self._poll(n):
                produce, pending = self.producer.produce, self.producer.__len__
        self.seq = seq
        self._finish()

    def _how_many(self, now: int, start: int, seq: int, pending) -> tuple[int, int]:
        """How many sends are due now, and the rate's start time (moved on after a stall, so as not to burst)."""
        rate, spec = self.profile.rate, self.spec
        if not rate:
            return (spec.batch if pending() < spec.max_outstanding else 0), start
        due = int((now - start) * rate / 1e9) - seq
        if due > rate:            # we fell more than a second behind (a stall): don't burst
            start = now - int(seq / rate * 1e9)
        return max(0, min(spec.batch, due)), start

    def _poll(self, sent: int) -> bool:
        """Serve delivery reports (waiting a little when nothing was sent). True: a fatal client error replaced
        the client."""
        from confluent_kafka import KafkaException

        rate = self.profile.rate
        try:
            if sent:
                self.producer.poll(0)
            elif rate:
                self.producer.poll(min(max(1.0 / rate, 0.001), self.spec.flush_interval_s))
            else:
                self.producer.poll(0.005)
        except KafkaException as e:
            if not e.args[0].fatal():
                raise
            self._replace_after_fatal(e.args[0])
            return True
        return False

    def _synchronous_failure(self, value: str, key: str, partition: int, t: int, error: str) -> None:
        """produce() raised: the message was never enqueued, so it certainly never reached a log."""
        self.invokes.lines.append(f"{value}\t{key}\t{partition}\t{t}\n")
        self.completes.lines.append(f"{value}\t{FAIL}\t{error}\t{partition}\t{NULL}\t{time.time_ns()}\n")
        self.outcomes[1] += 1

    def _finish(self) -> None:
        """flush, purge, flush: every send gets its outcome before the process exits."""
        timeout = self.spec.stop_timeout_s
        if timeout is None:
            timeout = self.profile.delivery_timeout_ms / 1000 + 5
        self._flush_for(timeout)
        if len(self.producer):
            self.producer.purge(in_queue=True, in_flight=True)
            self._flush_for(10)
        left = len(self.producer)
        if left:
            log.warning("producer %s: %d sends still without a report at exit (journaled as info)",
                        self.profile.name, left)
        self._checkpoint()
        self.invokes.close()
        self.completes.close()

    def _flush_for(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.producer.flush(min(0.25, self.spec.flush_interval_s)) > 0 and time.monotonic() < deadline:
            self._checkpoint()
        self._checkpoint()

    def _checkpoint(self) -> None:
        """Journals to the OS (invokes first: a completion is never on disk without its invoke), then counters."""
        self.invokes.flush()
        self.completes.flush()
        self.stats.journal.flush()
        ok, fail, info = self.outcomes
        write_progress(self.progress_path, self.seq, ok, fail, info)
        c, s = self.counters, self.slot
        c[s + INVOKED], c[s + SENT_OK], c[s + SENT_FAIL], c[s + SENT_INFO] = self.seq, ok, fail, info


__all__ = ["ProducerSpec", "run_producer", "ProducerWorker", "OK", "FAIL", "INFO"]
