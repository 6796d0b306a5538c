"""A synthetic results directory with known anomalies, shaped like a leader-isolation run.

For the report's tests and benchmark, and for looking at a report without a cluster. It writes every file
docs/history.md lists, including a hand-made verdict.json and anomalies.parquet, so the report can be tested
before (and independently of) the checker. Not a model of Kafka: the numbers only have to be plausible.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from kafka_chaos.history.schema import (
    ANOMALIES_SCHEMA,
    ANOMALY_KINDS,
    CLUSTER_SCHEMA,
    FAULTS_SCHEMA,
    READS_SCHEMA,
    SENDS_SCHEMA,
)
from kafka_chaos.history.synthetic.clock import START_NS

T0_NS = START_NS


@dataclass(frozen=True)
class SampleRun:
    """What to put in the sample run. Fault times are seconds after the start."""

    sends: int = 3000
    partitions: int = 3
    duration_s: float = 60.0
    seed: int = 7
    lost: int = 6               # acks=1 writes acked during the isolation and missing from the final read
    lost_violations: int = 0    # of which this many are acks=all writes, which the model says cannot be lost
    duplicates: int = 2
    isolate_at_s: float = 20.0
    heal_at_s: float = 35.0
    kill_at_s: float | None = 48.0  # a broker killed and never restarted: a fault window without a heal
    checked: bool = True        # write verdict.json and anomalies.parquet
    with_meta: bool = True
    with_cluster: bool = True
    with_faults: bool = True
    with_logs: bool = True
    scenario: str = "leader-isolate"


def write_sample_run(results_dir: Path | str, sample: SampleRun = SampleRun()) -> Path:
    """Writes the results directory and returns its path."""
    path = Path(results_dir)
    (path / "history").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(sample.seed)
    sends = _sends(sample, rng)
    lost_idx, violation_idx = _pick_lost(sends, sample, rng)
    dup_idx = _pick_duplicates(sends, sample, rng, exclude=np.concatenate([lost_idx, violation_idx]))
    reads = _final_reads(sends, np.concatenate([lost_idx, violation_idx]), dup_idx, sample)
    pq.write_table(pa.Table.from_pydict(sends, schema=SENDS_SCHEMA), path / "history" / "sends.parquet")
    pq.write_table(pa.Table.from_pydict(reads, schema=READS_SCHEMA), path / "history" / "reads.parquet")
    if sample.with_faults:
        pq.write_table(_faults(sample), path / "history" / "faults.parquet")
    if sample.with_cluster:
        pq.write_table(_cluster(sample), path / "history" / "cluster.parquet")
    if sample.with_logs:
        (path / "logs").mkdir(exist_ok=True)
        for node in (1, 2, 3):
            (path / "logs" / f"kafka-{node}.log").write_text(f"[sample] broker {node} log\n")
    if sample.with_meta:
        (path / "meta.json").write_text(json.dumps(_meta(path.name, sample), indent=2))
    if sample.checked:
        anomalies = _anomalies(sends, reads, lost_idx, violation_idx, dup_idx, sample.isolate_at_s)
        pq.write_table(pa.Table.from_pydict(anomalies, schema=ANOMALIES_SCHEMA), path / "anomalies.parquet")
        (path / "verdict.json").write_text(json.dumps(_verdict(path.name, sample, sends, reads, anomalies), indent=2))
    return path


def _in_isolation(t_ns: np.ndarray, sample: SampleRun) -> np.ndarray:
    t_s = (t_ns - T0_NS) / 1e9
    return (t_s >= sample.isolate_at_s) & (t_s < sample.heal_at_s)


def _sends(sample: SampleRun, rng: np.random.Generator) -> dict:
    n = sample.sends
    t_invoke = np.sort(T0_NS + (rng.random(n) * sample.duration_s * 1e9).astype(np.int64))
    faulty = _in_isolation(t_invoke, sample)
    latency = (rng.lognormal(np.log(4e6), 0.5, n) * np.where(faulty, 20, 1)).astype(np.int64)
    producer_idx = np.arange(n) % 2
    partition = (np.arange(n) % sample.partitions).astype(np.int32)
    roll = rng.random(n)
    outcome = np.where(faulty & (roll < 0.10), "fail", np.where(faulty & (roll < 0.15), "info", "ok"))
    error = np.where(outcome == "fail", "NOT_ENOUGH_REPLICAS", np.where(outcome == "info", "_MSG_TIMED_OUT", None))
    t_complete = np.where(outcome == "info", -1, t_invoke + latency)
    offset = np.full(n, -1, dtype=np.int64)
    for p in range(sample.partitions):
        ok_here = np.flatnonzero((partition == p) & (outcome == "ok"))
        offset[ok_here[np.argsort(t_complete[ok_here], kind="stable")]] = np.arange(len(ok_here))
    return {
        "op_id": np.arange(n, dtype=np.int64), "process": (np.arange(n) % 4).astype(np.int32),
        "producer": np.where(producer_idx == 0, "p0", "p1"), "acks": np.where(producer_idx == 0, "all", "1"),
        "idempotent": producer_idx == 0, "key": pa.nulls(n, pa.string()),
        "value": np.char.add("v", np.arange(n).astype(str)),
        "partition": partition, "offset": pa.array(offset, mask=offset < 0), "outcome": outcome,
        "error": pa.array(error, type=pa.string()), "t_invoke_ns": t_invoke,
        "t_complete_ns": pa.array(t_complete, mask=t_complete < 0),
    }


def _ok_acked_in_isolation(sends: dict, sample: SampleRun, acks: str) -> np.ndarray:
    t_complete = sends["t_complete_ns"].to_numpy(zero_copy_only=False)
    ok = (sends["outcome"] == "ok") & (sends["acks"] == acks) & (sends["partition"] == 0)
    return np.flatnonzero(ok & _in_isolation(np.nan_to_num(t_complete).astype(np.int64), sample))


def _pick_lost(sends: dict, sample: SampleRun, rng) -> tuple[np.ndarray, np.ndarray]:
    acks1 = _ok_acked_in_isolation(sends, sample, "1")
    acks_all = _ok_acked_in_isolation(sends, sample, "all")
    lost = np.sort(rng.choice(acks1, min(sample.lost, len(acks1)), replace=False))
    violations = np.sort(rng.choice(acks_all, min(sample.lost_violations, len(acks_all)), replace=False))
    return lost.astype(np.int64), violations.astype(np.int64)


def _pick_duplicates(sends: dict, sample: SampleRun, rng, exclude: np.ndarray) -> np.ndarray:
    candidates = np.setdiff1d(np.flatnonzero((sends["outcome"] == "ok") & (sends["acks"] == "1")), exclude)
    return np.sort(rng.choice(candidates, min(sample.duplicates, len(candidates)), replace=False)).astype(np.int64)


def _final_reads(sends: dict, lost: np.ndarray, dups: np.ndarray, sample: SampleRun) -> dict:
    """The final drain: every acked write but the lost ones, plus a second copy of each duplicate at the end."""
    offset = sends["offset"].to_numpy(zero_copy_only=False)
    keep = np.flatnonzero(sends["outcome"] == "ok")
    keep = np.setdiff1d(keep, lost)
    partition = sends["partition"][keep]
    values = sends["value"][keep]
    offsets = offset[keep].astype(np.int64)
    next_offset = {p: int(np.nanmax(np.where(sends["partition"] == p, offset, -1))) + 1
                   for p in range(sample.partitions)}
    dup_partitions = sends["partition"][dups]
    dup_offsets = np.array([0] * len(dups), dtype=np.int64)
    for i, p in enumerate(dup_partitions):
        dup_offsets[i] = next_offset[int(p)]
        next_offset[int(p)] += 1
    partition = np.concatenate([partition, dup_partitions]).astype(np.int32)
    offsets = np.concatenate([offsets, dup_offsets])
    values = np.concatenate([values, sends["value"][dups]])
    n = len(offsets)
    t_read = T0_NS + int((sample.duration_s + 2) * 1e9) + np.arange(n, dtype=np.int64) * 1000
    return {"consumer": np.full(n, "final"), "seq": np.arange(n, dtype=np.int64), "phase": np.full(n, "final"),
            "partition": partition, "offset": offsets, "key": pa.nulls(n, pa.string()), "value": values, "t_ns": t_read}


def _faults(sample: SampleRun) -> pa.Table:
    isolate = json.dumps({"effect": "net", "drops": [[1, 2], [1, 3], [2, 1], [3, 1]], "target": "leader"})
    rows = [
        (sample.isolate_at_s, "start", "leader-isolate", [1], isolate),
        (sample.heal_at_s, "heal", "leader-isolate", [1], isolate),
    ]
    if sample.kill_at_s is not None:
        rows.append((sample.kill_at_s, "start", "kill", [3], json.dumps({"effect": "kill", "signal": "SIGKILL"})))
    return pa.Table.from_pylist([
        {"t_ns": T0_NS + int(t * 1e9), "action": a, "fault": f, "nodes": n, "details": d} for t, a, f, n, d in rows
    ], schema=FAULTS_SCHEMA)


def _cluster(sample: SampleRun) -> pa.Table:
    """Leader 1 until isolated; after the session timeout broker 2 leads with ISR {2,3}; 1 rejoins after heal."""
    rows = []
    for t in np.arange(0, sample.duration_s + 0.01, 0.5):
        for p in range(sample.partitions):
            leader, isr = 1, [1, 2, 3]
            if sample.isolate_at_s + 9 <= t:
                leader, isr = 2, [2, 3]
            if sample.isolate_at_s <= t < sample.isolate_at_s + 9 and p == 0:
                leader, isr = (None, [1]) if t >= sample.isolate_at_s + 8 else (1, [1])
            if sample.heal_at_s + 3 <= t:
                isr = [2, 3, 1]
            if sample.kill_at_s is not None and t >= sample.kill_at_s + 9:
                isr = [m for m in isr if m != 3]
            rows.append({"t_ns": T0_NS + int(t * 1e9), "partition": p, "leader": leader, "isr": isr, "elr": [],
                         "high_watermark": None, "controller": 100})
    return pa.Table.from_pylist(rows, schema=CLUSTER_SCHEMA)


def _meta(run_id: str, sample: SampleRun) -> dict:
    return {
        "run_id": run_id, "partitions": sample.partitions, "replication_factor": 3, "min_insync_replicas": 2,
        "scenario": sample.scenario, "seed": sample.seed, "kafka_version": "4.1.0", "topic": "chaos",
        "command": f"kafka-chaos run {sample.scenario} --seed {sample.seed} --duration {int(sample.duration_s)}s",
        "unclean_leader_election": False, "elr_enabled": True, "consumer_mode": "assign",
        "producers": [
            {"name": "p0", "acks": "all", "idempotent": True, "max_in_flight": 5, "retries": 2147483647,
             "delivery_timeout_ms": 120000, "request_timeout_ms": 30000, "linger_ms": 5, "rate": 200},
            {"name": "p1", "acks": "1", "idempotent": False, "max_in_flight": 5, "retries": 2147483647,
             "delivery_timeout_ms": 120000, "request_timeout_ms": 30000, "linger_ms": 5, "rate": 200},
        ],
        "broker_settings": {"replica.lag.time.max.ms": "10000"},
        "start_ns": T0_NS, "end_ns": T0_NS + int(sample.duration_s * 1e9),
    }


def _anomalies(sends: dict, reads: dict, lost: np.ndarray, violations: np.ndarray, dups: np.ndarray,
               isolate_at_s: float = 20.0) -> dict:
    rows = []
    t_complete = sends["t_complete_ns"].to_numpy(zero_copy_only=False)
    offset = sends["offset"].to_numpy(zero_copy_only=False)

    def send_row(kind, i, classification, durability, reason, t_read=None, **excuse):
        rows.append({"kind": kind, "partition": int(sends["partition"][i]), "offset": int(offset[i]),
                     "value": str(sends["value"][i]), "producer": str(sends["producer"][i]), "op_id": int(i),
                     "t_invoke_ns": int(sends["t_invoke_ns"][i]), "t_complete_ns": int(t_complete[i]),
                     "t_read_ns": t_read, "classification": classification, "durability": durability,
                     "reason": reason, **excuse})

    isolation = {"excuse": "model_risk", "cause_id": "f0", "cause_t_ns": T0_NS + int(isolate_at_s * 1e9)}
    for i in lost:
        send_row("lost", i, "allowed", "at_risk",
                 "acks=1: acked by leader 1 alone while it was isolated; its log was truncated when it rejoined",
                 **isolation)
    for i in violations:
        send_row("lost", i, "violation", "guaranteed",
                 "acks=all with ISR {1,2,3} >= min.insync.replicas=2 at ack time: no clean election can lose it")
    first_read = {v: t for v, t in zip(reads["value"], reads["t_ns"])}
    for i in dups:
        send_row("duplicate", i, "allowed", None, "non-idempotent producer: a retried batch was appended twice",
                 t_read=int(first_read[str(sends["value"][i])]))
    return {name: [r.get(name) for r in rows] for name in ANOMALIES_SCHEMA.names}


def _verdict(run_id: str, sample: SampleRun, sends: dict, reads: dict, anomalies: dict) -> dict:
    counts = {k: anomalies["kind"].count(k) for k in ANOMALY_KINDS}
    violations = {}
    for kind, classification in zip(anomalies["kind"], anomalies["classification"]):
        if classification == "violation":
            violations[kind] = violations.get(kind, 0) + 1
    outcome = sends["outcome"]
    unavailable_ns = [T0_NS + int(sample.isolate_at_s * 1e9), T0_NS + int((sample.isolate_at_s + 9) * 1e9), 0]
    lost_guaranteed = sum(1 for k, d in zip(anomalies["kind"], anomalies["durability"])
                          if k == "lost" and d == "guaranteed")
    return {
        "run_id": run_id, "valid": not violations, "anomalies": counts, "violations": violations,
        "counts": {"sends": len(outcome), "ok": int((outcome == "ok").sum()), "fail": int((outcome == "fail").sum()),
                   "info": int((outcome == "info").sum()), "reads": len(reads["offset"]),
                   "final_reads": len(reads["offset"])},
        "unavailable": 0.004,
        "predicted": {"lost": "possible", "duplicates": "possible", "reordering": "possible",
                      "unavailable_windows": [unavailable_ns]},
        "observed": {"lost": counts["lost"], "lost_at_risk": counts["lost"] - lost_guaranteed,
                     "lost_guaranteed": lost_guaranteed, "duplicate": counts["duplicate"], "nonmonotonic_send": 0,
                     "unavailable": 0.004},
        "model": {"kafka_version": "4.1.0", "acks": ["1", "all"], "min_insync_replicas": 2, "elr_enabled": True},
        "meta": {"scenario": sample.scenario, "seed": sample.seed,
                 "command": f"kafka-chaos run {sample.scenario} --seed {sample.seed}"},
    }
