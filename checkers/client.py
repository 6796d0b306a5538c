"""Where the client voided its own guarantee, read from the sends and the client's log: librdkafka's idempotent
producer, its timeouts and its epoch bumps.

librdkafka keeps one producer id and epoch for all partitions. When messages of any partition time out
(delivery.timeout.ms), it drains the in-flight requests, bumps the epoch and renumbers every queued message from
the first one in the queue (INTRODUCTION.md, "Message timeout considerations"; rdkafka_idempotence.c,
rd_kafka_idemp_drain_epoch_bump). A batch of another partition queued for retry after a request that may have been
written (a timeout, a dropped connection) is then sent again under the new epoch, and the broker, which dedups only
within one producer id and epoch (ProducerStateManager), appends it a second time. The maintainers call the
guarantee partial for exactly this case (confluentinc/librdkafka#4953). Seen here: all-kill acks=all with 4.4.0,
8,527 values appended twice after a burst of timeouts, the client's EOS log showing the bumps.

librdkafka also bumps the epoch without any timeout: when a request fails with OUT_OF_ORDER_SEQUENCE_NUMBER because
an earlier in-flight request of the same partition failed ("skipped sequence numbers", rdkafka_request.c), and on
UNKNOWN_PRODUCER_ID. During a leader change that duplicates retried batches of other partitions in the same way
(confluentinc/librdkafka#4953, open; the maintainers: "an epoch bump ... [gives a] chance of duplications on other
partitions"). Those bumps show only in librdkafka's `eos` debug log, which idempotent producers here always write
to clients.log (workloads/client_logging.py), and are read back by history/client_log.epoch_bumps.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from kafka_chaos.history.client_log import EpochBump, epoch_bumps

# librdkafka's error names, and the Java client's (workloads/java: the exception's class name). Kafka's Java
# producer, idempotent and not transactional, also bumps the epoch after a batch expired (delivery.timeout.ms)
# unacknowledged: TransactionManager.markSequenceUnresolved, then maybeResolveSequences ->
# requestEpochBumpForPartition (apache/kafka, clients/.../producer/internals/TransactionManager.java). It bumps for
# that partition only; judged here per producer like librdkafka's, which is lenient for the Java client.
TIMEOUT_ERRORS = ("_MSG_TIMED_OUT", "_TIMED_OUT", "_TIMED_OUT_QUEUE", "TimeoutException")


EARLY_VOIDS_MAX_SENDS = 20_000_000


def may_void(producers, sends_file: Path | str) -> bool:
    """Whether `check` reads a run's client voids before its anomalies are known: an idempotent producer's
    duplicates need them, and its thread is idle while the pass runs (an anomaly-dense 10M history's timeouts took
    0.4 s after the pass). Not for a history of more than EARLY_VOIDS_MAX_SENDS sends: its timeouts (30M of the
    100M heavy bench history's) would sit beside the JVM's heap. producers: meta.json's."""
    if not any(p.get("idempotent") for p in producers):
        return False
    return pq.read_metadata(sends_file).num_rows <= EARLY_VOIDS_MAX_SENDS


def out_of_order(instances: pd.DataFrame) -> bool:
    """Rows only a client-side epoch bump could explain: duplicates or reordering of an idempotent producer."""
    if not len(instances) or "idempotent" not in instances:
        return False
    kinds = instances["kind"].isin(("duplicate", "nonmonotonic_send"))
    return bool((kinds & instances["idempotent"].fillna(False).astype(bool)).any())


def message_timeouts(sends_file: Path | str) -> dict[str, np.ndarray]:
    """producer -> sorted completion times of its sends that failed by a client-side timeout.

    Grouped in Arrow and numpy, producers as dictionary codes, not as a pandas frame with a string object per row:
    on an anomaly-dense history many sends time out (30M of the 100M heavy bench history's)."""
    timed_out = ds.dataset(str(sends_file)).to_table(
        columns=["producer", "t_complete_ns"],
        filter=pc.field("error").isin(list(TIMEOUT_ERRORS)) & pc.field("t_complete_ns").is_valid())
    if not timed_out.num_rows:
        return {}
    producer = pc.dictionary_encode(timed_out["producer"]).combine_chunks()
    code = producer.indices.to_numpy(zero_copy_only=False)
    times = timed_out["t_complete_ns"].to_numpy()
    order = np.lexsort((times, code))
    code, times = code[order], times[order]
    starts = np.flatnonzero(np.r_[True, code[1:] != code[:-1]])
    names = producer.dictionary.to_pylist()
    return {str(names[code[a]]): times[a:b] for a, b in zip(starts, np.r_[starts[1:], len(code)])}


@dataclass(frozen=True)
class ClientVoids:
    """Per producer, when its idempotence was void: sends that failed by a client-side timeout (after which
    librdkafka and the Java client bump the epoch), and the epoch bumps librdkafka logged, whatever their cause."""
    timeouts: dict[str, np.ndarray] = field(default_factory=dict)
    bumps: dict[str, tuple[np.ndarray, list[str]]] = field(default_factory=dict)   # sorted times, their reasons


def client_voids(run_dir: Path | str, sends_file: Path | str) -> ClientVoids:
    by_producer: dict[str, list[EpochBump]] = {}
    for bump in sorted(epoch_bumps(run_dir), key=lambda b: b.time_ns):
        by_producer.setdefault(bump.producer, []).append(bump)
    bumps = {p: (np.array([b.time_ns for b in bs], dtype=np.int64), [b.reason for b in bs])
             for p, bs in by_producer.items()}
    return ClientVoids(message_timeouts(sends_file), bumps)


def epoch_bump_between(voids: ClientVoids, producer, t0, t1) -> str | None:
    """Why `producer`'s idempotence was void between t0 and t1 (a write's invoke and its acknowledgement), if it
    was: the client logged an epoch bump in between, or some of its messages timed out in between (a bump follows)."""
    if t0 is None or t1 is None:
        return None
    return epoch_bumps_between(voids, [producer], np.array([t0], np.int64), np.array([t1], np.int64))[0]


def epoch_bumps_between(voids: ClientVoids, producers, t0: np.ndarray, t1: np.ndarray,
                        known: np.ndarray | None = None) -> np.ndarray:
    """epoch_bump_between for many writes at once: two binary searches per producer's writes, a reason only for the
    writes it voids (None elsewhere). known: where t0 and t1 are both known (default: everywhere)."""
    n = len(t0)
    out = np.full(n, None, dtype=object)
    who = np.array([str(p) for p in producers], dtype=object) if n else np.zeros(0, dtype=object)
    known = np.ones(n, dtype=bool) if known is None else known
    for producer in set(who[known]) & (set(voids.bumps) | set(voids.timeouts)):
        rows = np.nonzero(known & (who == producer))[0]
        bump_times, bump_reasons = voids.bumps.get(producer, (np.zeros(0, np.int64), []))
        lo, hi = (np.searchsorted(bump_times, t0[rows], side="left"),
                  np.searchsorted(bump_times, t1[rows], side="right"))
        for i in np.nonzero(hi > lo)[0]:
            reasons = ", ".join(dict.fromkeys(bump_reasons[lo[i]:hi[i]]))
            out[rows[i]] = (
                f"the client: producer {producer} bumped its epoch {hi[i] - lo[i]} time(s) while this write was "
                f"pending (librdkafka's log: {reasons}), and librdkafka renumbers every queued message under the new "
                f"epoch, so a retry of a batch that may already be in the log is appended again (rdkafka_request.c, "
                f"OUT_OF_ORDER_SEQUENCE_NUMBER \"skipped sequence numbers\" -> rd_kafka_idemp_drain_epoch_bump; "
                f"confluentinc/librdkafka#4953)")
        times = voids.timeouts.get(producer)
        if times is None or not len(times):
            continue
        lo, hi = np.searchsorted(times, t0[rows], side="left"), np.searchsorted(times, t1[rows], side="right")
        for i in np.nonzero((hi > lo) & (out[rows] == None))[0]:    # noqa: E711 (elementwise)
            out[rows[i]] = (
                f"the client: {hi[i] - lo[i]} of producer {producer}'s messages timed out while this write was "
                f"pending, and the client then bumps the producer epoch (librdkafka for every partition, the Java "
                f"client for the partition that timed out), sending retries that may already be "
                f"in the log again under the new epoch (librdkafka INTRODUCTION.md, message timeouts; "
                f"confluentinc/librdkafka#4953)")
    return out
