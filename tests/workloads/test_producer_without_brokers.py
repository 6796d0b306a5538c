"""The producer's own failure paths, without a cluster: a full queue fails synchronously, and the stop sequence
(flush, purge, flush) gives every queued send an outcome."""
from __future__ import annotations

import os
import threading

import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_chaos.history.journal import producer_paths, read_progress
from kafka_chaos.history.writer import HistoryWriter
from kafka_chaos.workloads.producer import ProducerSpec, ProducerWorker
from kafka_chaos.workloads.profile import ProducerProfile

META = {"partitions": 3, "replication_factor": 3, "min_insync_replicas": 2}


def test_unreachable_brokers_full_queue_and_purge_give_every_send_a_definite_failure(tmp_path):
    # a producer that never retries: its purged messages were never sent (with retries, see test_profile_...)
    history = HistoryWriter(tmp_path / "run", META)
    profile = ProducerProfile("lonely", acks="1", idempotent=False, retries=0, rate=500, delivery_timeout_ms=60_000)
    spec = ProducerSpec(0, profile, "127.0.0.1:9", "t", 3, str(history.journal_dir), stop_timeout_s=0.5,
                        client_overrides=(("queue.buffering.max.messages", 10), ("log_level", 0)))
    stop, ready, counters = threading.Event(), threading.Event(), [0] * 4
    threading.Timer(1.0, stop.set).start()
    ProducerWorker(spec, counters).run(stop, ready, os.getppid())
    summary = history.finalize()

    sends = pq.read_table(history.history_dir / "sends.parquet")
    counted = read_progress(producer_paths(history.journal_dir, 0)["progress"])
    assert sends.num_rows == counted["invoked"] == counters[0] > 10
    errors = {d["values"]: d["counts"] for d in pc.value_counts(sends["error"]).to_pylist()}
    assert errors == {"_PURGE_QUEUE": 10, "_QUEUE_FULL": sends.num_rows - 10}    # never sent: all definite
    assert set(sends["outcome"].to_pylist()) == {"fail"} and summary.without_outcome == 0
    assert sends["partition"].null_count == 0 and sends["offset"].null_count == sends.num_rows
