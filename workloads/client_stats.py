"""The producer's own view, once a second: librdkafka's statistics JSON (`statistics.interval.ms`, `stats_cb`)
cut down to the few fields that say whose time a stall was (checkers/stall_cause.py).

Per emission: one `client` row (messages queued, the queue's limit, the topic's metadata age), one `broker` row per
known broker (connection state, requests awaiting transmission / a response, timeouts and retries so far, rtt)
and one `partition` row per partition of the topic (the leader as the client sees it, messages queued and in
flight). Bootstrap brokers (node id -1) are left out: no partition is led by them. Field meanings are librdkafka's
STATISTICS.md; the rows go to history/journal/producer-N.stats.jsonl and from there to history/client_stats.parquet.
"""
from __future__ import annotations

import json
import time

STATS_INTERVAL_MS = 1000


def _int(x):
    return None if x is None else int(x)


def _clock_offset_ns() -> int:
    """Wall clock minus librdkafka's clock (rd_clock: CLOCK_MONOTONIC, as Python's monotonic_ns on Linux)."""
    return time.time_ns() - time.monotonic_ns()


def stats_rows(raw: str, topic: str, offset_ns: int | None = None) -> list[dict]:
    """The compact rows of one statistics JSON document (see docs/history.md, history/client_stats.parquet)."""
    doc = json.loads(raw)
    offset_ns = _clock_offset_ns() if offset_ns is None else offset_ns
    t_ns = int(doc["ts"]) * 1000 + offset_ns if doc.get("ts") is not None else time.time_ns()
    tp = (doc.get("topics") or {}).get(topic) or {}
    rows = [{"t_ns": t_ns, "scope": "client", "msgq_cnt": _int(doc.get("msg_cnt")),
             "msg_max": _int(doc.get("msg_max")), "metadata_age_ms": _int(tp.get("metadata_age"))}]
    for b in (doc.get("brokers") or {}).values():
        node = int(b.get("nodeid", -1))
        if node < 0:
            continue
        rows.append({"t_ns": t_ns, "scope": "broker", "broker": node, "state": b.get("state"),
                     "state_age_ms": None if b.get("stateage") is None else int(b["stateage"]) // 1000,
                     "waitresp_cnt": _int(b.get("waitresp_cnt")), "outbuf_cnt": _int(b.get("outbuf_cnt")),
                     "req_timeouts": _int(b.get("req_timeouts")), "txretries": _int(b.get("txretries")),
                     "rtt_avg_us": _int((b.get("rtt") or {}).get("avg"))})
    for key, p in (tp.get("partitions") or {}).items():
        partition = int(p.get("partition", key))
        if partition < 0:           # the unassigned-partition queue
            continue
        leader = _int(p.get("leader"))
        rows.append({"t_ns": t_ns, "scope": "partition", "partition": partition,
                     "leader": None if leader is None or leader < 0 or p.get("unknown") else leader,
                     "msgq_cnt": int(p.get("msgq_cnt", 0)) + int(p.get("xmit_msgq_cnt", 0)),
                     "msgs_inflight": _int(p.get("msgs_inflight")),
                     "metadata_age_ms": _int(tp.get("metadata_age"))})
    return rows


class StatsJournal:
    """A `stats_cb` that journals each emission's rows as JSON lines (flushed with the worker's other journals).

    The callback is served on the worker's own poll()/flush() calls, from the thread that owns the journal."""

    def __init__(self, journal, topic: str):
        self.journal, self.topic = journal, topic
        self.offset_ns = _clock_offset_ns()

    def config(self) -> dict:
        return {"statistics.interval.ms": STATS_INTERVAL_MS, "stats_cb": self}

    def __call__(self, raw: str) -> None:
        try:
            rows = stats_rows(raw, self.topic, self.offset_ns)
        except (ValueError, KeyError, TypeError):
            return                  # a document we cannot read is no row, never a crash of the workload
        self.journal.lines.extend(json.dumps(r, separators=(",", ":")) + "\n" for r in rows)
