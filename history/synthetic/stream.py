"""Synthetic results directories: a clean, realistic history in the exact documented format.

Used by the tests, the benchmark and the report's development. A run has `sends` produce() calls spread over
`duration_s`, a live consumer (or several, all reading every partition in assign mode) and a final drain that
read every record that reached a log. With `faults=True` the broker leading partition 0 is SIGKILLed at 40% of
the run; its partitions have no leader until the controller fences it (broker.session.timeout.ms), sends to them
fail or time out meanwhile (a sixth of the timed-out ones reached the log anyway: `recovered`), and the cluster
samples show the election, the ISR shrink and the re-expansion after the restart. The history is anomaly-free:
`inject` (or `inject_anomalies`) then adds exactly k instances of a kind, for the tests.

Big runs are generated and written in chunks, so 100M sends fit in memory.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_chaos.base.versions import version_tuple
from kafka_chaos.history.schema import CLUSTER_SCHEMA, FAULTS_SCHEMA, READS_SCHEMA, SENDS_SCHEMA
from kafka_chaos.history.synthetic import shapes
from kafka_chaos.history.synthetic.clock import START_NS
from kafka_chaos.history.synthetic.inject import inject_anomalies

SESSION_TIMEOUT_NS = 9_000_000_000
SAMPLE_PERIOD_NS = 500_000_000
DELIVERY_TIMEOUT_MS = 30_000
CHUNK = 1_000_000


@dataclass(frozen=True)
class SyntheticProducer:
    """One producer process of the synthetic workload (the `producers` entries of meta.json)."""

    name: str
    acks: str = "all"
    idempotent: bool = True
    max_in_flight: int = 5
    retries: int = 2_147_483_647

    def to_meta(self, rate: float) -> dict:
        return {"name": self.name, "acks": self.acks, "idempotent": self.idempotent,
                "max_in_flight": self.max_in_flight, "retries": self.retries,
                "delivery_timeout_ms": DELIVERY_TIMEOUT_MS, "request_timeout_ms": 30_000,
                "linger_ms": 5, "rate": rate}


@dataclass(frozen=True)
class SyntheticSpec:
    """Everything that determines a synthetic run."""

    sends: int
    partitions: int = 3
    seed: int = 0
    faults: bool = True
    producers: tuple[SyntheticProducer, ...] = (SyntheticProducer("p0"), SyntheticProducer("p1"))
    consumers: int = 1
    duration_s: float | None = None   # default: max(60 s, sends / 1000 per s)
    replication_factor: int = 3
    min_insync_replicas: int = 2
    kafka_version: str = "4.1.0"
    consumer_mode: str = "assign"
    shape: shapes.Shape = shapes.CLEAN      # anomalies on top of the clean history (bench shapes)

    @property
    def duration_ns(self) -> int:
        seconds = self.duration_s if self.duration_s is not None else max(60.0, self.sends / 1000.0)
        return int(seconds * 1e9)


@dataclass(frozen=True)
class FaultTimeline:
    """When the leader of partition 0 (node 1) dies, is fenced, comes back and rejoins the ISRs."""

    kill_ns: int
    fence_ns: int
    heal_ns: int
    rejoin_ns: int
    node: int = 1


def _leader0(p: int, rf: int) -> int:
    return p % rf + 1


def _replicas(p: int, rf: int) -> list[int]:
    first = _leader0(p, rf)
    return [(first - 1 + i) % rf + 1 for i in range(rf)]


def fault_timeline(spec: SyntheticSpec) -> FaultTimeline | None:
    if not spec.faults:
        return None
    kill = START_NS + int(spec.duration_ns * 0.4)
    fence = kill + SESSION_TIMEOUT_NS
    heal = max(START_NS + int(spec.duration_ns * 0.6), fence + 1_000_000_000)
    return FaultTimeline(kill_ns=kill, fence_ns=fence, heal_ns=heal, rejoin_ns=heal + 2_000_000_000)


@dataclass
class _Counters:
    """Running state carried from one chunk to the next."""

    next_offset: np.ndarray
    live_seq: np.ndarray
    final_seq: int = 0
    hw_samples: np.ndarray | None = None   # [partition, sample] landed records invoked by the sample time
    sample_times: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


def _chunk(spec: SyntheticSpec, tl: FaultTimeline | None, i0: int, i1: int, c: _Counters):
    """Sends, live reads and final reads for op ids [i0, i1) (with spec.shape's anomalies, shapes.py)."""
    rng = np.random.default_rng([spec.seed, i0])
    n = i1 - i0
    op = np.arange(i0, i1, dtype=np.int64)
    period = spec.duration_ns / max(spec.sends, 1)
    t_inv = START_NS + (op * period).astype(np.int64) + rng.integers(0, max(int(period // 2), 1), n)
    nprod = len(spec.producers)
    process = (op % nprod).astype(np.int32)
    acks = np.array([p.acks for p in spec.producers], dtype=object)[process]
    idem = np.array([p.idempotent for p in spec.producers])[process]
    names = np.array([p.name for p in spec.producers], dtype=object)[process]
    part = rng.integers(0, spec.partitions, n).astype(np.int32)
    t_done = t_inv + 2_000_000 + rng.exponential(3_000_000, n).astype(np.int64)

    outcome = np.full(n, "ok", dtype=object)
    error = np.full(n, None, dtype=object)
    landed = np.ones(n, dtype=bool)
    if tl is not None:
        led_by_victim = np.array([_leader0(p, spec.replication_factor) == tl.node
                                  for p in range(spec.partitions)])[part]
        dark = led_by_victim & (t_inv >= tl.kill_ns) & (t_inv < tl.fence_ns + 500_000_000)
        u = rng.random(n)
        acked_blind = dark & (acks == "0")          # acks=0 "succeeds" into the void
        failed = dark & ~acked_blind & (u < 1 / 3)
        timed_out = dark & ~acked_blind & (u >= 1 / 3)
        outcome[failed] = "fail"
        error[failed] = "NOT_LEADER_OR_FOLLOWER"
        t_done = np.where(failed, t_inv + 1_000_000, t_done)
        outcome[timed_out] = "info"
        error[timed_out] = "_MSG_TIMED_OUT"
        t_done = np.where(timed_out, t_inv + DELIVERY_TIMEOUT_MS * 1_000_000, t_done)
        landed = ~(failed | acked_blind | (timed_out & (u < 5 / 6)))

    twice = shapes.outcomes(spec.shape, rng, acks, outcome, error, t_inv, t_done, landed)
    offset = np.full(n, -1, dtype=np.int64)
    for p in range(spec.partitions):
        idx = np.nonzero(landed & (part == p))[0]
        offset[idx] = c.next_offset[p] + np.arange(len(idx))
        c.next_offset[p] += len(idx)
        if c.hw_samples is not None and len(idx):
            c.hw_samples[p] += np.searchsorted(t_inv[idx], c.sample_times, side="right")
    # a write appended twice: the retry's copy lands after the chunk's first copies
    rec_off = np.zeros(len(twice), dtype=np.int64)
    for p in range(spec.partitions):
        idx = np.nonzero(part[twice] == p)[0]
        rec_off[idx] = c.next_offset[p] + np.arange(len(idx))
        c.next_offset[p] += len(idx)
        if c.hw_samples is not None and len(idx):
            c.hw_samples[p] += np.searchsorted(t_inv[twice[idx]], c.sample_times, side="right")

    values = pc.binary_join_element_wise("v", pc.cast(pa.array(op), pa.string()), "")
    known_offset = landed & (outcome == "ok") & (acks != "0")
    sends = pa.table({
        "op_id": op, "process": process, "producer": pa.array(names, pa.string()),
        "acks": pa.array(acks, pa.string()), "idempotent": idem,
        "key": pa.nulls(n, pa.string()), "value": values, "partition": part,
        "offset": pa.array(offset, mask=~known_offset),
        "outcome": pa.array(outcome, pa.string()), "error": pa.array(error, pa.string()),
        "t_invoke_ns": t_inv, "t_complete_ns": t_done,
    }, schema=SENDS_SCHEMA)

    first = np.nonzero(landed)[0]
    li = np.concatenate([first, twice])                         # the records: a send index each
    r_off = np.concatenate([offset[first], rec_off])
    l_vals = values.take(pa.array(li))
    live = []
    for k in range(spec.consumers):
        seq = c.live_seq[k] + np.arange(len(li), dtype=np.int64)
        c.live_seq[k] += len(li)
        live.append(pa.table({
            "consumer": pa.array(np.full(len(li), f"c{k}", dtype=object), pa.string()),
            "seq": seq, "phase": pa.array(np.full(len(li), "live", dtype=object), pa.string()),
            "partition": part[li], "offset": r_off, "key": pa.nulls(len(li), pa.string()),
            "value": l_vals, "t_ns": t_inv[li] + 10_000_000 + k * 1_000,
        }, schema=READS_SCHEMA))
    missing, replaced = shapes.reads(spec.shape, rng, li, known_offset & (acks != "0"),
                                     np.arange(len(li)) < len(first), np.nonzero((outcome == "info") & ~landed)[0])
    keep = ~missing
    f_vals = values.take(pa.array(np.where(replaced >= 0, replaced, li)[keep]))
    nf = int(keep.sum())
    seq = c.final_seq + np.arange(nf, dtype=np.int64)
    c.final_seq += nf
    final = pa.table({
        "consumer": pa.array(np.full(nf, "final", dtype=object), pa.string()),
        "seq": seq, "phase": pa.array(np.full(nf, "final", dtype=object), pa.string()),
        "partition": part[li][keep], "offset": r_off[keep], "key": pa.nulls(nf, pa.string()),
        "value": f_vals, "t_ns": START_NS + spec.duration_ns + 60_000_000_000 + seq * 1_000,
    }, schema=READS_SCHEMA)
    return sends, live, final


def _faults_table(tl: FaultTimeline | None) -> pa.Table | None:
    if tl is None:
        return None
    details = json.dumps({"effect": "kill", "signal": "SIGKILL", "target": "leader", "partition": 0,
                          "resolved": [tl.node]})
    return pa.table({"t_ns": [tl.kill_ns, tl.heal_ns], "action": ["start", "heal"],
                     "fault": ["leader-kill"] * 2, "nodes": [[tl.node], [tl.node]],
                     "details": [details, details]}, schema=FAULTS_SCHEMA)


def _cluster_table(spec: SyntheticSpec, tl: FaultTimeline | None, c: _Counters) -> pa.Table:
    rows = {"t_ns": [], "partition": [], "leader": [], "isr": [], "elr": [], "high_watermark": [],
            "controller": []}
    elr_exposed = version_tuple(spec.kafka_version) >= (4, 0)
    for si, t in enumerate(c.sample_times.tolist()):
        for p in range(spec.partitions):
            replicas = _replicas(p, spec.replication_factor)
            leader, isr = replicas[0], list(replicas)
            controller = 1
            if tl is not None and t >= tl.kill_ns:
                controller = 2
                if tl.fence_ns <= t < tl.rejoin_ns:
                    isr = [r for r in replicas if r != tl.node]
                if t >= tl.fence_ns and leader == tl.node:
                    leader = isr[0] if t < tl.rejoin_ns else [r for r in replicas if r != tl.node][0]
                if t >= tl.rejoin_ns:
                    isr = [r for r in replicas if r != tl.node] + [tl.node]
            rows["t_ns"].append(t)
            rows["partition"].append(p)
            rows["leader"].append(leader)
            rows["isr"].append(isr)
            rows["elr"].append([] if elr_exposed else None)
            rows["high_watermark"].append(int(c.hw_samples[p, si]))
            rows["controller"].append(controller)
    return pa.table(rows, schema=CLUSTER_SCHEMA)


def _meta(spec: SyntheticSpec, run_id: str, ends: np.ndarray) -> dict:
    rate = spec.sends / (spec.duration_ns / 1e9) / max(len(spec.producers), 1)
    return {
        "run_id": run_id, "partitions": spec.partitions, "replication_factor": spec.replication_factor,
        "min_insync_replicas": spec.min_insync_replicas,
        "scenario": "synthetic-leader-kill" if spec.faults else "synthetic-no-faults",
        "seed": spec.seed, "command": f"synthetic sends={spec.sends} seed={spec.seed}",
        "kafka_version": spec.kafka_version, "topic": "chaos", "unclean_leader_election": False,
        "consumer_mode": spec.consumer_mode,
        "producers": [p.to_meta(rate) for p in spec.producers],
        "broker_settings": {},
        "start_ns": START_NS, "end_ns": START_NS + spec.duration_ns,
        "drain": {"healthy": True, "incomplete": [], "ends": {str(p): int(e) for p, e in enumerate(ends)},
                  "records": int(ends.sum())},
    }


def write_synthetic_run(directory, sends: int, partitions: int = 3, seed: int = 0, faults: bool = True,
                        inject: dict[str, int] | None = None, **spec_fields) -> Path:
    """Write a results directory with a clean synthetic history (plus `inject`ed anomalies) and return it.

    `spec_fields` are the other SyntheticSpec fields (producers, consumers, duration_s, kafka_version, ...).
    Injection needs the whole history in memory, so keep `sends` small when injecting.
    """
    spec = SyntheticSpec(sends=sends, partitions=partitions, seed=seed, faults=faults, **spec_fields)
    out = Path(directory)
    (out / "history").mkdir(parents=True, exist_ok=True)
    tl = fault_timeline(spec)
    counters = _Counters(next_offset=np.zeros(partitions, dtype=np.int64),
                         live_seq=np.zeros(spec.consumers, dtype=np.int64))
    counters.sample_times = np.arange(START_NS, START_NS + spec.duration_ns + 1, SAMPLE_PERIOD_NS,
                                      dtype=np.int64)
    counters.hw_samples = np.zeros((partitions, len(counters.sample_times)), dtype=np.int64)

    if inject:
        parts = [_chunk(spec, tl, i0, min(i0 + CHUNK, sends), counters) for i0 in range(0, sends, CHUNK)]
        s = _to_pandas(pa.concat_tables([p[0] for p in parts]) if parts else SENDS_SCHEMA.empty_table())
        r = _to_pandas(pa.concat_tables([t for p in parts for t in p[1]] + [p[2] for p in parts])
                       if parts else READS_SCHEMA.empty_table())
        s, r = inject_anomalies(s, r, inject, np.random.default_rng(seed + 1))
        pq.write_table(pa.Table.from_pandas(s, schema=SENDS_SCHEMA, preserve_index=False),
                       out / "history/sends.parquet")
        pq.write_table(pa.Table.from_pandas(r, schema=READS_SCHEMA, preserve_index=False),
                       out / "history/reads.parquet")
    else:
        with pq.ParquetWriter(out / "history/sends.parquet", SENDS_SCHEMA) as sw, \
                pq.ParquetWriter(out / "history/reads.parquet", READS_SCHEMA) as rw:
            if sends == 0:
                sw.write_table(SENDS_SCHEMA.empty_table())
                rw.write_table(READS_SCHEMA.empty_table())
            finals = []
            for i0 in range(0, sends, CHUNK):
                s, live, final = _chunk(spec, tl, i0, min(i0 + CHUNK, sends), counters)
                sw.write_table(s)
                for t in live:
                    rw.write_table(t)
                finals.append(final)
                if len(finals) * CHUNK >= 4 * CHUNK:   # the drain comes after the live reads; bound memory
                    _spill(out, finals)
                    finals = []
            _spill(out, finals)
            spill = out / "history/.final-spill"
            if spill.exists():
                for f in sorted(spill.iterdir()):
                    rw.write_table(pq.read_table(f, schema=READS_SCHEMA))
                    f.unlink()
                spill.rmdir()

    faults_table = _faults_table(tl)
    if faults_table is not None:
        pq.write_table(faults_table, out / "history/faults.parquet")
    pq.write_table(_cluster_table(spec, tl, counters), out / "history/cluster.parquet")
    (out / "meta.json").write_text(json.dumps(_meta(spec, out.name, counters.next_offset), indent=2) + "\n")
    return out


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    """Nullable integer columns stay integers (not floats with NaN)."""
    return table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype()}.get)


def _spill(out: Path, finals: list[pa.Table]) -> None:
    if not finals:
        return
    spill = out / "history/.final-spill"
    spill.mkdir(exist_ok=True)
    n = len(list(spill.iterdir()))
    pq.write_table(pa.concat_tables(finals), spill / f"{n:06d}.parquet")
