"""Where the client voided its own guarantee, read from the sends: librdkafka's idempotent producer and timeouts.

librdkafka keeps one producer id and epoch for all partitions. When messages of any partition time out
(delivery.timeout.ms), it drains the in-flight requests, bumps the epoch and renumbers every queued message from
the first one in the queue (INTRODUCTION.md, "Message timeout considerations"; rdkafka_idempotence.c,
rd_kafka_idemp_drain_epoch_bump). A batch of another partition queued for retry after a request that may have been
written (a timeout, a dropped connection) is then sent again under the new epoch, and the broker, which dedups only
within one producer id and epoch (ProducerStateManager), appends it a second time. The maintainers call the
guarantee partial for exactly this case (confluentinc/librdkafka#4953). Seen here: all-kill acks=all with 4.4.0,
8,527 values appended twice after a burst of timeouts, the client's EOS log showing the bumps.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.dataset as ds

# librdkafka's error names, and the Java client's (workloads/java: the exception's class name). Kafka's Java
# producer, idempotent and not transactional, also bumps the epoch after a batch expired (delivery.timeout.ms)
# unacknowledged: TransactionManager.markSequenceUnresolved, then maybeResolveSequences ->
# requestEpochBumpForPartition (apache/kafka, clients/.../producer/internals/TransactionManager.java). It bumps for
# that partition only; judged here per producer like librdkafka's, which is lenient for the Java client.
TIMEOUT_ERRORS = ("_MSG_TIMED_OUT", "_TIMED_OUT", "_TIMED_OUT_QUEUE", "TimeoutException")


def message_timeouts(sends_file: Path | str) -> dict[str, np.ndarray]:
    """producer -> sorted completion times of its sends that failed by a client-side timeout."""
    timed_out = ds.dataset(str(sends_file)).to_table(
        columns=["producer", "t_complete_ns"], filter=pc.field("error").isin(list(TIMEOUT_ERRORS))).to_pandas()
    timed_out = timed_out.dropna(subset=["t_complete_ns"])
    return {str(p): np.sort(g.to_numpy(dtype=np.int64)) for p, g in timed_out.groupby("producer")["t_complete_ns"]}


def epoch_bump_between(timeouts: dict[str, np.ndarray], producer, t0, t1) -> str | None:
    """Why `producer`'s idempotence was void between t0 and t1 (a write's invoke and its acknowledgement), if it
    was: some of its messages timed out in between, so librdkafka bumped the epoch."""
    times = timeouts.get(str(producer))
    if times is None or t0 is None or t1 is None or not len(times):
        return None
    lo, hi = np.searchsorted(times, t0, side="left"), np.searchsorted(times, t1, side="right")
    if hi <= lo:
        return None
    return (f"the client: {hi - lo} of producer {producer}'s messages timed out while this write was pending, and "
            f"the client then bumps the producer epoch (librdkafka for every partition, the Java client for the "
            f"partition that timed out), sending retries that may already be "
            f"in the log again under the new epoch (librdkafka INTRODUCTION.md, message timeouts; "
            f"confluentinc/librdkafka#4953)")
