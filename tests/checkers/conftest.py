"""Fixtures for the checker tests: hand-built results directories and one Spark session per pytest process."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_chaos.history.schema import READS_SCHEMA, SENDS_SCHEMA

T = 1_767_225_600_000_000_000
MS = 1_000_000


def send(value, partition=0, offset=None, outcome="ok", acks="all", producer="p0", process=0, idempotent=True,
         op_id=None, t=0):
    """One sends.parquet row; `t` is milliseconds after the run start."""
    return {"op_id": op_id, "process": process, "producer": producer, "acks": acks, "idempotent": idempotent,
            "key": None, "value": value, "partition": partition, "offset": offset, "outcome": outcome,
            "error": None if outcome == "ok" else "_MSG_TIMED_OUT", "t_invoke_ns": T + t * MS,
            "t_complete_ns": T + t * MS + 2 * MS}


def read(value, partition=0, offset=0, consumer="final", seq=None, t=1000):
    return {"consumer": consumer, "seq": seq, "phase": "final" if consumer == "final" else "live",
            "partition": partition, "offset": offset, "key": None, "value": value, "t_ns": T + t * MS}


def frames(sends: list[dict], reads: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fill op ids and per-consumer seqs in list order, with the exact schemas' dtypes."""
    for i, s in enumerate(sends):
        s["op_id"] = i if s["op_id"] is None else s["op_id"]
    seqs: dict[str, int] = {}
    for r in reads:
        if r["seq"] is None:
            r["seq"] = seqs.get(r["consumer"], 0)
        seqs[r["consumer"]] = r["seq"] + 1
    types = {pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype()}.get
    s = pa.Table.from_pylist(sends, schema=SENDS_SCHEMA).to_pandas(types_mapper=types)
    r = pa.Table.from_pylist(reads, schema=READS_SCHEMA).to_pandas(types_mapper=types)
    return s, r


def fault(t_ms, action, effect, nodes, fault_name=None, **details):
    """One faults.parquet row; `t` is milliseconds after the run start."""
    return {"t_ns": T + t_ms * MS, "action": action, "fault": fault_name or effect, "nodes": list(nodes),
            "details": json.dumps({"effect": effect, **details})}


def sample(t_ms, leader, isr, hw=None, partition=0, elr=None, controller=101):
    """One cluster.parquet row."""
    return {"t_ns": T + t_ms * MS, "partition": partition, "leader": leader, "isr": list(isr), "elr": elr,
            "high_watermark": hw, "controller": controller}


def write_run(directory: Path, sends: list[dict], reads: list[dict], faults: list[dict] | None = None,
              cluster: list[dict] | None = None, **meta) -> Path:
    """A results directory with the required files, plus faults and cluster samples when given."""
    from kafka_chaos.history.schema import CLUSTER_SCHEMA, FAULTS_SCHEMA
    (directory / "history").mkdir(parents=True, exist_ok=True)
    if faults is not None:
        pq.write_table(pa.Table.from_pylist(faults, schema=FAULTS_SCHEMA), directory / "history/faults.parquet")
    if cluster is not None:
        pq.write_table(pa.Table.from_pylist(cluster, schema=CLUSTER_SCHEMA), directory / "history/cluster.parquet")
    s, r = frames(sends, reads)
    pq.write_table(pa.Table.from_pandas(s, schema=SENDS_SCHEMA, preserve_index=False),
                   directory / "history/sends.parquet")
    pq.write_table(pa.Table.from_pandas(r, schema=READS_SCHEMA, preserve_index=False),
                   directory / "history/reads.parquet")
    (directory / "meta.json").write_text(json.dumps({
        "run_id": directory.name, "partitions": 3, "replication_factor": 3, "min_insync_replicas": 2, **meta}))
    return directory


@pytest.fixture(scope="session")
def spark():
    from kafka_chaos.checkers.spark import get_spark
    return get_spark()
