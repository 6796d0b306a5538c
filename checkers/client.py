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

from kafka_chaos.checkers.model.windows import Cause
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
    sends_file: str | None = None      # the run's sends.parquet, for the few sends the judge looks back from


def client_voids(run_dir: Path | str, sends_file: Path | str) -> ClientVoids:
    by_producer: dict[str, list[EpochBump]] = {}
    for bump in sorted(epoch_bumps(run_dir), key=lambda b: b.time_ns):
        by_producer.setdefault(bump.producer, []).append(bump)
    bumps = {p: (np.array([b.time_ns for b in bs], dtype=np.int64), [b.reason for b in bs])
             for p, bs in by_producer.items()}
    return ClientVoids(message_timeouts(sends_file), bumps, str(sends_file))


def epoch_bump_between(voids: ClientVoids, producer, t0, t1) -> str | None:
    """Why `producer`'s idempotence was void between t0 and t1 (a write's invoke and its acknowledgement), if it
    was: the client logged an epoch bump in between, or some of its messages timed out in between (a bump follows)."""
    if t0 is None or t1 is None:
        return None
    return epoch_bumps_between(voids, [producer], np.array([t0], np.int64), np.array([t1], np.int64))[0]


def epoch_bumps_between(voids: ClientVoids, producers, t0: np.ndarray, t1: np.ndarray,
                        known: np.ndarray | None = None, causes: np.ndarray | None = None) -> np.ndarray:
    """epoch_bump_between for many writes at once: two binary searches per producer's writes, a reason only for the
    writes it voids (None elsewhere). known: where t0 and t1 are both known (default: everywhere). causes: filled,
    where given, with the first bump or timeout in the write's [t0, t1] as a Cause (checkers.excuses)."""
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
            if causes is not None:
                causes[rows[i]] = Cause(f"clients.log {producer} epoch bump", int(bump_times[lo[i]]),
                                        f"producer {producer} bumped its epoch ({bump_reasons[lo[i]]})")
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
            if causes is not None:
                causes[rows[i]] = Cause(f"clients.log {producer} message timeout", int(times[lo[i]]),
                                        f"a message of producer {producer} timed out")
            out[rows[i]] = (
                f"the client: {hi[i] - lo[i]} of producer {producer}'s messages timed out while this write was "
                f"pending, and the client then bumps the producer epoch (librdkafka for every partition, the Java "
                f"client for the partition that timed out), sending retries that may already be "
                f"in the log again under the new epoch (librdkafka INTRODUCTION.md, message timeouts; "
                f"confluentinc/librdkafka#4953)")
    return out


# -- the send before a nonmonotonic one ----------------------------------------------------------------------------
SERIES = ["process", "producer", "partition"]
EARLIER = ["op_id", "offset", "t_invoke_ns", "t_complete_ns"]      # what earlier_sends gives of the earlier send
EARLIER_LOOKBACK_NS = 300 * 1_000_000_000      # read this far back first; the whole run only for a row it misses


def earlier_sends(sends_file: Path | str | None, rows: pd.DataFrame) -> pd.DataFrame:
    """Per row (an ok send with an offset), the `ok` send with an offset just before it in its series (process,
    producer, partition) in (t_invoke_ns, op_id) order: the send a `nonmonotonic_send` was acked below (the finders'
    order: checkers.reference, series_files.nonmonotonic_sends). Its EARLIER columns, <NA> where there is none or
    no sends file. Read from sends.parquet for these rows' producers and partitions only, not carried through the
    finders: a run has a few such rows, and the three finders would each need another window column."""
    out = pd.DataFrame({c: pd.Series(pd.NA, index=rows.index, dtype="Int64") for c in EARLIER})
    cols = SERIES + ["t_invoke_ns", "op_id"]
    want = rows[rows[cols].notna().all(axis=1)] if len(rows) else rows
    for lookback in (EARLIER_LOOKBACK_NS, None):
        if sends_file is None or not len(want):
            break
        found = _previous_in_series(_ok_sends(sends_file, want, lookback), want)
        out.loc[found.index, EARLIER] = found[EARLIER].to_numpy()
        want = want[out.loc[want.index, "op_id"].isna().to_numpy()]
    return out


def _ok_sends(sends_file, rows: pd.DataFrame, lookback_ns: int | None) -> pd.DataFrame:
    """The ok sends with an offset of rows' producers and partitions invoked no later than the last row (and no
    earlier than lookback_ns before the first)."""
    t = rows["t_invoke_ns"].astype("int64")
    keep = (pc.field("outcome") == "ok") & (pc.field("offset") >= 0) & (pc.field("t_invoke_ns") <= int(t.max())) \
        & pc.field("producer").isin([str(p) for p in rows["producer"].unique()]) \
        & pc.field("partition").isin([int(p) for p in rows["partition"].unique()])
    if lookback_ns is not None:
        keep = keep & (pc.field("t_invoke_ns") >= int(t.min()) - lookback_ns)
    table = ds.dataset(str(sends_file)).to_table(columns=SERIES + EARLIER, filter=keep)
    frame = table.to_pandas()
    frame["producer"] = frame["producer"].astype(str)
    return frame


def _previous_in_series(sends: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """For each row found in `sends` (by op_id, unique in a run), the send sorted just before it in its series."""
    ordered = sends.sort_values(SERIES + ["t_invoke_ns", "op_id"], kind="stable").reset_index(drop=True)
    at = pd.Index(ordered["op_id"]).get_indexer(rows["op_id"].astype("int64"))
    prev = np.maximum(at - 1, 0)
    series = ordered[SERIES].to_numpy(dtype=object)
    same = (at > 0) & (series[prev] == series[np.maximum(at, 0)]).all(axis=1)
    found = ordered.iloc[prev[same]][EARLIER].astype("Int64")
    found.index = rows.index[same]
    return found
