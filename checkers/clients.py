"""The clients side by side: per client library, what it sent, what was acked, lost, duplicated, and its stalls.

A run with `--client both` has one producer per client (meta.json `producers[].client`) writing the same profile
to the same topic at the same time, so the brokers' faults are the same for both and what differs is the client.
This table is a comparison, not a judgement: every row it counts was already judged with the rest of the run.
Stalls are measured per client exactly as for the whole run (checkers/availability.py), from that client's sends
only: a client whose writes waited while the other's were acked shows a stall the run as a whole does not.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from kafka_chaos.checkers import availability, stall_cause
from kafka_chaos.checkers.reference import Counts
from kafka_chaos.history.meta import RunMeta
from kafka_chaos.history.schema import ACKED

DEFAULT_CLIENT = "librdkafka"      # runs before the `client` key were all librdkafka's
SEND_COLUMNS = ["producer", "acks", "partition", "outcome", "t_invoke_ns", "t_complete_ns"]
COUNTED = ("lost", "duplicate", "nonmonotonic_send")     # the judged kinds the table counts per client


def producer_clients(meta: RunMeta) -> dict[str, str]:
    """producer name -> client library, from meta.json's producer profiles."""
    return {str(p.get("name")): str(p.get("client") or DEFAULT_CLIENT) for p in meta.producers}


def side_by_side(meta: RunMeta) -> bool:
    """The run names its clients (meta.json `clients`, or a `client` on some producer profile)."""
    return bool(meta.extra.get("clients")) or any("client" in p for p in meta.producers)


def compare(sends: pd.DataFrame, judged: pd.DataFrame, meta: RunMeta, predicted: list[tuple[int, int, int]],
            threshold_s: float = availability.DEFAULT_THRESHOLD_S,
            explain: stall_cause.Explainer | None = None) -> dict[str, dict]:
    """client -> {library, version, producers, sends, acked, fail, info, lost, lost_violations, duplicates,
    nonmonotonic_send, longest_stall_s, stalled_s, stalls[, stall_causes, attribution]}. `sends`: sends.parquet's
    columns SEND_COLUMNS; `judged`: the judged anomaly rows (kind, value, producer, classification); `explain`:
    the run's stall attribution, applied to each client's stalls with that client's own statistics."""
    by_producer = producer_clients(meta)
    client_of = sends["producer"].map({p: by_producer.get(str(p), DEFAULT_CLIENT) for p in sends["producer"].unique()})
    out: dict[str, dict] = {}
    for client in sorted(set(client_of)):
        mine = sends[client_of == client]
        acked = mine[(mine["outcome"] == "ok") & mine["acks"].isin(ACKED)]
        found = availability.stalls(*availability.reference_buckets(mine), predicted, threshold_s, meta.end_ns)
        out[client] = _row(meta, client, judged, ClientSends(
            sorted(str(p) for p in mine["producer"].unique()), len(mine), len(acked),
            int((mine["outcome"] == "fail").sum()), int((mine["outcome"] == "info").sum())), found, explain)
    return out


@dataclass(frozen=True)
class ClientSends:
    """What one client sent: its producers, and its sends by outcome."""

    producers: list[str]
    sends: int
    acked: int        # ok with acks 1 or all
    fail: int
    info: int


def _row(meta: RunMeta, client: str, judged: pd.DataFrame, sent: ClientSends, found: list[availability.Stall],
         explain: stall_cause.Explainer | None) -> dict:
    """One client's entry: what it sent, its judged rows counted (lost, duplicate, nonmonotonic_send: each carries
    its send's producer, so the client is the producer's, looked up once per producer) and its stalls."""
    by_producer = producer_clients(meta)
    counted = judged[judged["kind"].isin(COUNTED)] if len(judged) else judged
    if len(counted):
        client_of = counted["producer"].map({p: by_producer.get(str(p), DEFAULT_CLIENT)
                                             for p in counted["producer"].dropna().unique()})
        counted = counted[(client_of == client).fillna(False).to_numpy(dtype=bool)]
    lost = counted[counted["kind"] == "lost"] if len(counted) else counted
    info = (meta.extra.get("clients") or {}).get(client) or {}
    row = {
        "library": info.get("library", client), "version": info.get("version"), "producers": sent.producers,
        "sends": int(sent.sends), "acked": int(sent.acked), "fail": int(sent.fail), "info": int(sent.info),
        "lost": int(len(lost)), "lost_violations": int((lost["classification"] == "violation").sum()),
        "duplicates": int((counted["kind"] == "duplicate").sum()) if len(counted) else 0,
        "nonmonotonic_send": int((counted["kind"] == "nonmonotonic_send").sum()) if len(counted) else 0,
        "longest_stall_s": round(max((s.seconds for s in found), default=0.0), 1),
        "stalled_s": round(sum(s.seconds for s in found), 1),
        "stalls": [[s.start_ns, s.end_ns, s.partition, round(s.seconds, 1)] for s in found],
    }
    if explain is not None:
        row |= stall_cause.explained(explain, found, sent.producers)
    return row


@dataclass(frozen=True)
class WholeRun:
    """The run's own figures, which are a lone client's: its counts, acks levels and stalls."""

    counts: Counts
    acks: tuple[str, ...]
    stalls: list[availability.Stall]


def compare_run(sends_file: Path | str, judged: pd.DataFrame, meta: RunMeta, predicted: list[tuple[int, int, int]],
                threshold_s: float, explain: stall_cause.Explainer | None = None,
                whole: WholeRun | None = None) -> dict[str, dict] | None:
    """verdict.json's `clients` for a run that names its clients; None for one that does not.

    When every producer in the sends is one client's and every send had acks 1 or all, that client's entry is the
    run's own figures (`whole`): only the producer column is read. Re-reading every send into pandas and measuring
    its stalls again cost a 10M-send run ~17 s."""
    if not side_by_side(meta):
        return None
    if whole is not None and set(whole.acks) <= set(ACKED):
        producers = pq.read_table(sends_file, columns=["producer"], read_dictionary=["producer"])["producer"]
        names = sorted(str(p) for p in pc.unique(producers.combine_chunks().dictionary).to_pylist()
                       if p is not None) if len(producers) else []
        by_producer = producer_clients(meta)
        if len({by_producer.get(p, DEFAULT_CLIENT) for p in names}) == 1 and producers.null_count == 0:
            c = whole.counts
            client = by_producer.get(names[0], DEFAULT_CLIENT)
            return {client: _row(meta, client, judged, ClientSends(names, c.sends, c.ok, c.fail, c.info),
                                 whole.stalls, explain)}
    sends = ds.dataset(str(sends_file)).to_table(columns=SEND_COLUMNS).to_pandas()
    return compare(sends, judged, meta, predicted, threshold_s, explain)


def summary_line(clients: dict[str, dict]) -> str:
    """One line per client for the terminal."""
    return "; ".join(f"{c} {v.get('version') or ''}: acked {v['acked']}, lost {v['lost']}, duplicates "
                     f"{v['duplicates']}, longest stall {v['longest_stall_s']:.1f} s" for c, v in clients.items())
