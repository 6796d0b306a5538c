"""The replica audit at the end of a run: after the heal and the final drain, every replica's log of the topic read
from its own files (cluster/replica_files.py), parsed (history/record_batch.py) and written as
history/replicas.parquet and history/replica_logs.parquet (history/replicas.py), for checkers/replica_audit.py.

It waits (up to `wait_s`) for every partition's ISR to hold all its replicas, as Kafka's invariant is stated for
ISR members; a replica still outside then is read all the same, its row saying so (`in_isr` false, `note` why).
The partition's high watermark is the leader's, from a ListOffsets once the ISR is whole. An audit that cannot run
at all (no broker answers) leaves its files absent and says why in meta.json `replica_audit`; the run goes on.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

from kafka_chaos.cluster.replica_files import replica_files
from kafka_chaos.history.replicas import ReplicaFiles, ReplicaState, replica_tables, write_replicas

log = logging.getLogger(__name__)
WAIT_S = 30.0


def _whole(states) -> bool:
    return all(s.leader is not None and set(s.isr) == set(s.replicas) for s in states)


def _states(cluster, topic: str, wait_s: float):
    """Each partition's state once every ISR is whole, or the last seen after wait_s; and whether it was."""
    deadline = time.monotonic() + wait_s
    while True:
        states = cluster.describe(topic)
        if _whole(states) or time.monotonic() >= deadline:
            return states, _whole(states)
        time.sleep(0.5)


def run_audit(cluster, run_dir: Path, topic: str, wait_s: float = WAIT_S) -> dict:
    """Read and write every replica of `topic`; what meta.json's `replica_audit` records."""
    t0 = time.monotonic()
    try:
        states, whole = _states(cluster, topic, wait_s)
        hws = cluster.high_watermarks(topic)
        replicas = []
        for s in states:
            for broker in s.replicas:
                note = None if broker in s.isr else \
                    f"outside the ISR {sorted(s.isr)} after {wait_s:.0f} s (leader {s.leader})"
                state = ReplicaState(leader=broker == s.leader, in_isr=broker in s.isr, hw=hws.get(s.partition),
                                     note=note)
                replicas.append((_read(cluster, broker, topic, s.partition), state))
        tables = replica_tables(replicas, topic, time.time_ns())
        write_replicas(run_dir, tables)
    except Exception as e:        # the audit is a check of its own: a run goes on without it, saying why
        log.warning("replica audit not run: %s", e)
        return {"ran": False, "error": f"{type(e).__name__}: {e}"}
    took = round(time.monotonic() - t0, 2)
    log.info("replica audit: %d replicas, %d records read in %.1f s%s", tables[1].num_rows, tables[0].num_rows,
             took, "" if whole else "; some replica stayed outside the ISR")
    return {"ran": True, "isr_whole": whole, "replicas": tables[1].num_rows, "records": tables[0].num_rows,
            "seconds": took}


def _read(cluster, broker: int, topic: str, partition: int):
    """A replica's files; read again once if they changed under the read (a file growing while archived)."""
    node = cluster.node(broker)
    files = replica_files(node, topic, partition)
    if files["error"] and "could not be read" in files["error"]:
        files = replica_files(node, topic, partition)
    return ReplicaFiles(broker, partition, **files)
