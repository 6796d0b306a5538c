"""Whose time a stall was: the cluster's, the client's (with the mechanism and the setting that bounds it), or
neither's, second by second, from the model and from the producers' own statistics (history/client_stats.parquet).

A stall (checkers/availability.py) is split in three: the part inside the model's predicted unavailable windows is
`cluster`, named by the model's reason (no reachable leader; ISR below min.insync.replicas). The rest is cut into
slices of at most a second, and each slice is read off the latest statistics each producer emitted by its end:
  - the partition's leader unknown to the client            -> metadata refresh
  - the leader (as the client sees it) not connected       -> reconnecting to that broker
  - requests to that leader in flight with no response     -> waiting for the produce request's timeout
  - the client's queue full                                -> queue.buffering.max.messages / buffer.memory
  - messages of the partition expired in the slice          -> delivery.timeout.ms
  - request retries since the previous sample, none in flight -> retry backoff
  - the client's leader is not the cluster's (cluster.parquet) -> stale metadata
except that a slice where the cluster's own metadata (cluster.parquet) names no leader is `cluster` too, though
outside the model's windows (a broker crash it did not know of: its self-check says so); `unexplained` otherwise
("no client statistics" when the producer emitted none near that time, as for every run recorded before the table
existed). librdkafka times a produce request out at the first message's remaining
delivery.timeout.ms, capped by socket.timeout.ms (rd_kafka_ProduceRequest); its request.timeout.ms is only the
broker's wait for acks. The Java client times a request out at request.timeout.ms (NetworkClient).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from kafka_chaos.checkers.availability import Stall

SLICE_NS = 1_000_000_000
STALE_NS = 2_500_000_000           # statistics older than this say nothing about the slice
STATS_FILE = "history/client_stats.parquet"
EXPIRED = ("_MSG_TIMED_OUT", "TimeoutException")     # librdkafka's / the Java client's delivery timeout
NO_STATS = "no client statistics"
NO_WAIT = "the client's statistics show no waiting"
CLUSTER, CLIENT, UNEXPLAINED = "cluster", "client", "unexplained"
LEADERLESS = "no leader in the cluster's metadata (the samples), which the model did not predict"
SAMPLE_FRESH_NS = 5_000_000_000     # a cluster sample older than this says nothing about the slice


@dataclass(frozen=True)
class ClientSettings:
    """One producer's effective settings that bound a wait (meta.json's profile; the rest the clients' defaults:
    librdkafka CONFIGURATION.md, Kafka's ProducerConfig)."""

    client: str = "librdkafka"
    acks: str = "all"
    delivery_timeout_ms: int = 30_000
    request_timeout_ms: int = 10_000
    socket_timeout_ms: int = 60_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    metadata_refresh_ms: int = 300_000           # topic.metadata.refresh.interval.ms / metadata.max.age.ms
    connection_setup_timeout_ms: int = 30_000    # socket.connection.setup.timeout.ms (Java: 10000)
    reconnect_backoff_max_ms: int = 10_000       # reconnect.backoff.max.ms (Java: 1000)

    @classmethod
    def from_profile(cls, p: dict) -> "ClientSettings":
        java = p.get("client") == "java"
        return cls(client="java" if java else "librdkafka", acks=str(p.get("acks") or "all"),
                   delivery_timeout_ms=int(p.get("delivery_timeout_ms") or cls.delivery_timeout_ms),
                   request_timeout_ms=int(p.get("request_timeout_ms") or cls.request_timeout_ms),
                   connection_setup_timeout_ms=10_000 if java else 30_000,
                   reconnect_backoff_max_ms=1_000 if java else 10_000)

    def in_flight(self, broker: int, timed_out: bool) -> str:
        """Requests to the leader unanswered: timed out later (unreachable), or answered late (the broker waited:
        for acks=all, on the ISR, up to request.timeout.ms)."""
        if self.client == "java":
            limit = f"request.timeout.ms={self.request_timeout_ms}"
        else:
            limit = f"the first message's delivery.timeout.ms={self.delivery_timeout_ms} (capped by " \
                    f"socket.timeout.ms={self.socket_timeout_ms}; request.timeout.ms={self.request_timeout_ms} is " \
                    f"the broker's)"
        if timed_out:
            return f"requests in flight to unreachable broker {broker}, timed out at {limit}"
        if self.acks == "all":
            return f"requests in flight to broker {broker}, awaiting its acks=all response (the leader waits for " \
                   f"the ISR up to request.timeout.ms={self.request_timeout_ms})"
        return f"requests in flight to broker {broker}, awaiting its response (the client waits until {limit})"

    def metadata(self, what: str) -> str:
        key = "metadata.max.age.ms" if self.client == "java" else "topic.metadata.refresh.interval.ms"
        return f"metadata refresh: {what} (retry.backoff.ms={self.retry_backoff_ms} up to retry.backoff.max.ms=" \
               f"{self.retry_backoff_max_ms}; {key}={self.metadata_refresh_ms})"

    def connecting(self, broker: int, state: str) -> str:
        return f"broker {broker} not connected ({state}): reconnecting (socket.connection.setup.timeout.ms=" \
               f"{self.connection_setup_timeout_ms}, reconnect.backoff.max.ms={self.reconnect_backoff_max_ms})"


@dataclass
class _Series:
    """One producer's statistics: emission times and, per emission, its rows by scope and key."""

    times: np.ndarray
    client: list[dict]
    brokers: list[dict[int, dict]]
    partitions: list[dict[int, dict]]

    @classmethod
    def of(cls, rows: pd.DataFrame) -> "_Series":
        times, client, brokers, partitions = [], [], [], []
        for t, g in rows.groupby("t_ns", sort=True):
            recs = g.to_dict("records")
            times.append(int(t))
            client.append(next((r for r in recs if r["scope"] == "client"), {}))
            brokers.append({int(r["broker"]): r for r in recs if r["scope"] == "broker" and _known(r["broker"])})
            partitions.append({int(r["partition"]): r for r in recs if r["scope"] == "partition"
                               and _known(r["partition"])})
        return cls(np.asarray(times, dtype=np.int64), client, brokers, partitions)

    def at(self, t: int) -> int | None:
        """Index of the latest emission at or before t, if recent enough to describe t."""
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        return i if i >= 0 and t - self.times[i] <= STALE_NS else None


def _known(x) -> bool:
    return x is not None and not pd.isna(x)


def _n(r: dict | None, key: str) -> int:
    v = (r or {}).get(key)
    return int(v) if _known(v) else 0


@dataclass
class Explainer:
    """Attributes stalls for one run. stats: client_stats.parquet as pandas (None: the run has no such table);
    windows: the model's (start, end, partition, reason) unavailable windows; leaders: the cluster samples'
    (t_ns, partition, leader); expired: (producer, partition, t_complete_ns) of sends that hit the delivery timeout."""

    windows: list[tuple[int, int, int, str]]
    stats: pd.DataFrame | None = None
    settings: dict[str, ClientSettings] = field(default_factory=dict)
    leaders: pd.DataFrame | None = None
    expired: pd.DataFrame | None = None
    _series: dict[str, _Series] = field(default_factory=dict, init=False)
    _samples: dict | None = field(default=None, init=False)      # partition -> (times, leaders), built on first use

    def __post_init__(self):
        if self.stats is not None and len(self.stats):
            for producer, rows in self.stats.groupby("producer", sort=True):
                self._series[str(producer)] = _Series.of(rows)

    @property
    def has_statistics(self) -> bool:
        return bool(self._series)

    def explain(self, stall: Stall, producers: list[str] | None = None) -> dict:
        """The stall's split: {start_ns, end_ns, partition, seconds, cluster_s, client_s, unexplained_s, causes:
        [{cause, mechanism, seconds}], pieces: [[start_ns, end_ns, cause, mechanism]]}. producers: whose
        statistics speak for it (None: every producer's)."""
        names = sorted(self._series) if producers is None else sorted(p for p in producers if p in self._series)
        pieces = []
        for a, b, reason in self._cluster_pieces(stall):
            if reason is not None:
                pieces.append([a, b, CLUSTER, reason])
                continue
            for t in range(a, b, SLICE_NS):
                cause, why = self._slice(stall.partition, t, min(b, t + SLICE_NS), names, stall)
                pieces.append([t, min(b, t + SLICE_NS), cause, why])
        pieces = _joined(pieces)
        causes: dict[tuple[str, str], int] = {}
        for a, b, cause, why in pieces:
            causes[(cause, why)] = causes.get((cause, why), 0) + b - a
        split = {c: round(sum(ns for (k, _), ns in causes.items() if k == c) / 1e9, 3)
                 for c in (CLUSTER, CLIENT, UNEXPLAINED)}
        return {"start_ns": stall.start_ns, "end_ns": stall.end_ns, "partition": stall.partition,
                "seconds": round(stall.seconds, 3), "cluster_s": split[CLUSTER], "client_s": split[CLIENT],
                "unexplained_s": split[UNEXPLAINED],
                "causes": [{"cause": c, "mechanism": m, "seconds": round(ns / 1e9, 3)}
                           for (c, m), ns in causes.items()],
                "pieces": pieces}

    def _cluster_pieces(self, stall: Stall) -> list[tuple[int, int, str | None]]:
        """The stall cut at the model's window edges: each piece with the reason of the first window covering it
        (None: no window does)."""
        mine = [(max(s, stall.start_ns), min(e, stall.end_ns), r) for s, e, p, r in self.windows
                if int(p) == stall.partition and s < stall.end_ns and e > stall.start_ns]
        edges = sorted({stall.start_ns, stall.end_ns} | {x for s, e, _ in mine for x in (s, e)})
        out: list[tuple[int, int, str | None]] = []
        for a, b in zip(edges, edges[1:]):
            reason = next((r for s, e, r in sorted(mine) if s <= a and e >= b), None)
            if out and out[-1][2] == reason and out[-1][1] == a:
                out[-1] = (out[-1][0], b, reason)
            else:
                out.append((a, b, reason))
        return out

    def _slice(self, partition: int, a: int, b: int, names: list[str], stall: Stall) -> tuple[str, str]:
        if self._leaderless(partition, b):
            return CLUSTER, LEADERLESS
        seen = False
        for name in names:
            cause, why = self._producer_slice(name, partition, a, b, stall)
            if cause == CLIENT:
                return cause, why
            seen = seen or why != NO_STATS
        return UNEXPLAINED, NO_WAIT if seen else NO_STATS

    def _producer_slice(self, name: str, partition: int, a: int, b: int, stall: Stall) -> tuple[str, str]:
        s, cfg = self._series[name], self.settings.get(name, ClientSettings())
        i = s.at(b)
        if i is None:
            return UNEXPLAINED, NO_STATS
        part = s.partitions[i].get(partition)
        if part is None or not _known(part.get("leader")):
            return CLIENT, cfg.metadata("the partition's leader unknown to the client")
        leader = int(part["leader"])
        broker, client = s.brokers[i].get(leader), s.client[i]
        state = (broker or {}).get("state")
        if _known(state) and state != "UP":
            return CLIENT, cfg.connecting(leader, state)
        waiting = _n(broker, "waitresp_cnt") if _known(state) else _n(client, "waitresp_cnt")   # Java: client-wide
        if waiting > 0 and (_n(part, "msgs_inflight") > 0 or _n(part, "msgq_cnt") > 0 or cfg.client == "java"):
            return CLIENT, cfg.in_flight(leader, self._timed_out(s, leader, stall))
        if _n(client, "msg_max") and _n(client, "msgq_cnt") >= _n(client, "msg_max"):
            return CLIENT, f"queue full (queue.buffering.max.messages={_n(client, 'msg_max')})"
        if _known(client.get("buffer_available_bytes")) and _n(client, "buffer_available_bytes") == 0:
            return CLIENT, "buffer full (buffer.memory; send() blocks up to max.block.ms=1000)"
        if self._expired(name, partition, a, b):
            return CLIENT, f"messages expired at delivery.timeout.ms={cfg.delivery_timeout_ms}"
        before = s.brokers[i - 1].get(leader) if i > 0 else None
        if broker and before and _n(broker, "txretries") > _n(before, "txretries") and not waiting:
            return CLIENT, f"retry backoff (retry.backoff.ms={cfg.retry_backoff_ms} up to retry.backoff.max.ms=" \
                           f"{cfg.retry_backoff_max_ms})"
        actual = self._cluster_leader(partition, b)
        if actual is not None and actual != leader:
            return CLIENT, cfg.metadata(f"the client sends to broker {leader}, the cluster's leader is {actual}")
        return UNEXPLAINED, NO_WAIT

    @staticmethod
    def _timed_out(s: _Series, broker: int, stall: Stall) -> bool:
        """The broker's request timeouts rose during the stall (to a sample shortly after its end)."""
        first = max(0, int(np.searchsorted(s.times, stall.start_ns, side="right")) - 1)
        stop = int(np.searchsorted(s.times, stall.end_ns + STALE_NS, side="right"))
        now = _n(s.brokers[first].get(broker), "req_timeouts")
        return any(_n(s.brokers[j].get(broker), "req_timeouts") > now for j in range(first + 1, stop))

    def _expired(self, producer: str, partition: int, a: int, b: int) -> bool:
        e = self.expired
        if e is None or not len(e):
            return False
        t = e["t_complete_ns"].to_numpy(dtype=np.int64)
        return bool(((e["producer"].to_numpy() == producer) & (e["partition"].to_numpy() == partition)
                     & (t >= a) & (t < b)).any())

    def _leaderless(self, partition: int, t: int) -> bool:
        """The cluster's own metadata (the latest sample by t, at most SAMPLE_FRESH_NS old) names no leader: the
        cluster's time even where the model predicted none (a crash it did not know of: see its disagreements)."""
        i, times, leaders = self._sample_at(partition, t)
        return i >= 0 and times[i] >= t - SAMPLE_FRESH_NS and not _known(leaders[i])

    def _sample_at(self, partition: int, t: int) -> tuple[int, np.ndarray, np.ndarray]:
        """(index of the partition's latest sample at or before t, or -1; its sample times; its leaders), by binary
        search over arrays built once per partition (a stall is judged slice by slice)."""
        if self._samples is None:
            s = self.leaders
            self._samples = {} if s is None or not len(s) else {
                int(p): (g["t_ns"].to_numpy(dtype=np.int64), g["leader"].to_numpy(dtype=object))
                for p, g in s.groupby("partition", sort=False)}
        times, leaders = self._samples.get(int(partition), (np.empty(0, dtype=np.int64), np.empty(0, dtype=object)))
        return int(np.searchsorted(times, t, side="right")) - 1, times, leaders

    def _cluster_leader(self, partition: int, t: int) -> int | None:
        i, _, leaders = self._sample_at(partition, t)
        return int(leaders[i]) if i >= 0 and _known(leaders[i]) else None


def _joined(pieces: list[list]) -> list[list]:
    out: list[list] = []
    for p in pieces:
        if out and out[-1][1] == p[0] and out[-1][2:] == p[2:]:
            out[-1][1] = p[1]
        else:
            out.append(list(p))
    return out


def totals(explained: list[dict], has_statistics: bool) -> dict:
    """availability.attribution of verdict.json: seconds per cause, and per (cause, mechanism)."""
    by: dict[str, float] = {}
    for e in explained:
        for c in e["causes"]:
            key = f"{c['cause']}: {c['mechanism']}"
            by[key] = round(by.get(key, 0.0) + c["seconds"], 3)
    return {"statistics": has_statistics,
            **{f"{c}_s": round(sum(e[f"{c}_s"] for e in explained), 3) for c in (CLUSTER, CLIENT, UNEXPLAINED)},
            "mechanisms": dict(sorted(by.items(), key=lambda kv: -kv[1]))}


def summary_line(attribution: dict) -> str:
    """`check`'s one line: the stall seconds split, the largest client mechanism named."""
    client = [(k, v) for k, v in attribution["mechanisms"].items() if k.startswith(CLIENT)]
    top = f" (most: {client[0][0][len(CLIENT) + 2:]}, {client[0][1]:.1f} s)" if client else ""
    note = "" if attribution["statistics"] else f" ({NO_STATS})"
    return f"stall seconds: cluster {attribution['cluster_s']:.1f}, client {attribution['client_s']:.1f}{top}, " \
           f"unexplained {attribution['unexplained_s']:.1f}{note}"


def check_lines(verdict: dict) -> list[str]:
    """`check`'s lines under a run: its stall seconds split, and each client's when several wrote side by side."""
    avail, clients = verdict.get("availability") or {}, verdict.get("clients") or {}
    lines = [summary_line(avail["attribution"])] if avail.get("stalls") and avail.get("attribution") else []
    return lines + [f"{name}: {summary_line(c['attribution'])}" for name, c in clients.items()
                    if len(clients) > 1 and c.get("stalls") and c.get("attribution")]


def read_stats(run_dir: Path | str) -> pd.DataFrame | None:
    path = Path(run_dir) / STATS_FILE
    return pd.read_parquet(path) if path.exists() else None


def read_expired(sends_file: Path | str) -> pd.DataFrame:
    """(producer, partition, t_complete_ns) of the sends that hit their delivery timeout."""
    import pyarrow.dataset as ds

    table = ds.dataset(str(sends_file)).to_table(columns=["producer", "partition", "t_complete_ns"],
                                                 filter=ds.field("error").isin(list(EXPIRED)))
    return table.to_pandas().dropna()


def settings_of(producers: list[dict]) -> dict[str, ClientSettings]:
    return {str(p.get("name")): ClientSettings.from_profile(p) for p in producers}


def explainer(run_dir: Path | str | None, producers: list[dict], unavailable: list, acks: set[str],
              samples: pd.DataFrame | None, stalls: list[Stall]) -> Explainer:
    """The run's Explainer over the model's unavailable windows (checkers.model Window) for the acks in use; the
    sends are read (for expiries) only when a stall has time the model leaves open and the run has statistics."""
    windows = [(w.start_ns, w.end_ns, w.partition, w.reason) for w in unavailable if acks & set(w.acks)]
    stats = read_stats(run_dir) if run_dir is not None else None
    expired = None
    if stats is not None and any(s.unpredicted_s > 0 for s in stalls):
        expired = read_expired(Path(run_dir) / "history" / "sends.parquet")
    leaders = samples[["t_ns", "partition", "leader"]].sort_values("t_ns", kind="stable") \
        if samples is not None and len(samples) else None
    return Explainer(windows, stats, settings_of(producers), leaders, expired)


def explained(ex: Explainer, stalls: list[Stall], producers: list[str] | None = None) -> dict:
    """`stall_causes` (one entry per stall, in the order of `stalls`) and `attribution` (the totals)."""
    causes = [ex.explain(s, producers) for s in stalls]
    has = ex.has_statistics if producers is None else any(p in ex._series for p in producers)
    return {"stall_causes": causes, "attribution": totals(causes, has)}
