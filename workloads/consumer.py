"""The live consumer worker: one spawned process that journals every record it receives, in order of receipt.

Assign mode (the default) reads every partition from the beginning, so each live consumer sees the whole topic;
subscribe mode joins one consumer group, so the group together sees it once. Errors the client reports while
brokers fail are expected and only logged: the history records what was received, not why something wasn't.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from kafka_chaos.history.journal import LineJournal, esc, reads_paths, write_sidecar
from kafka_chaos.workloads.client_logging import client_logging
from kafka_chaos.workloads.worker import detach_from_ctrl_c, should_stop

log = logging.getLogger(__name__)

CONSUMER_MODES = ("assign", "subscribe")


@dataclass(frozen=True)
class ConsumerSpec:
    """Everything a consumer process needs; picklable."""

    index: int
    name: str
    bootstrap_servers: str
    topic: str
    partitions: int
    journal_dir: str
    mode: str = "assign"
    group_id: str = "kafka-chaos"
    flush_interval_s: float = 0.25
    batch: int = 1000
    client_log: str | None = None       # results/<run_id>/logs/clients.log


def consumer_config(bootstrap_servers: str, group_id: str) -> dict:
    """Settings every reader of the history shares: no commits, read_committed, from the earliest offset."""
    return {"bootstrap.servers": bootstrap_servers, "group.id": group_id,
            "enable.auto.commit": False, "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest", "isolation.level": "read_committed",
            "enable.partition.eof": True}


def record_line(seq: int, msg, t_ns: int) -> str:
    key, value = msg.key(), msg.value()
    key = esc(None if key is None else key.decode("utf-8", "backslashreplace"))
    value = esc("" if value is None else value.decode("utf-8", "backslashreplace"))
    return f"{seq}\t{msg.partition()}\t{msg.offset()}\t{key}\t{value}\t{t_ns}\n"


def run_consumer(spec: ConsumerSpec, stop_event, ready_event, counters, parent_pid: int) -> None:
    """Process entry point. counters[spec.index] is this consumer's count of records received."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    detach_from_ctrl_c()
    paths = reads_paths(spec.journal_dir, spec.name)
    write_sidecar(paths["sidecar"], {"kind": "reads", "consumer": spec.name, "phase": "live"})
    journal = LineJournal(paths["data"])
    group = spec.group_id if spec.mode == "subscribe" else f"{spec.group_id}-{spec.name}"
    consumer = Consumer(consumer_config(spec.bootstrap_servers, group)
                        | client_logging(spec.client_log, f"consumer-{spec.name}"))
    if spec.mode == "subscribe":
        consumer.subscribe([spec.topic])
    else:
        consumer.assign([TopicPartition(spec.topic, p, OFFSET_BEGINNING) for p in range(spec.partitions)])
    ready_event.set()
    append, time_ns = journal.lines.append, time.time_ns
    seq, tick_ns = 0, int(spec.flush_interval_s * 1e9)
    next_tick = time_ns() + tick_ns
    try:
        while True:
            msgs = consumer.consume(spec.batch, min(0.1, spec.flush_interval_s))
            t = time_ns()
            for m in msgs:
                err = m.error()
                if err is None:
                    append(record_line(seq, m, t))
                    seq += 1
                elif err.code() != KafkaError._PARTITION_EOF:
                    log.debug("consumer %s: %s", spec.name, err)
            if t >= next_tick:
                journal.flush()
                counters[spec.index] = seq
                if should_stop(stop_event, parent_pid):
                    break
                next_tick = t + tick_ns
    finally:
        journal.close()
        counters[spec.index] = seq
        consumer.close()
