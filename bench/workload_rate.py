"""Throughput of the producer workload with its full history: recorded sends per second, and the CPU it costs.

Runs the workload as fast as possible against a local 3-broker cluster, for acks=all with idempotence and for
acks=1, and checks that no send is missing from the history (rows == the producers' own counts, values unique,
every send with its outcome). Not a test: numbers depend on the machine and on what else runs on it.

    python bench/workload_rate.py [--seconds 60] [--producers 2] [--consumers 0] [--cluster NAME]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_chaos.cluster.config import ClusterConfig
from kafka_chaos.cluster.kafka_cluster import KafkaCluster
from kafka_chaos.history.journal import producer_paths, read_progress
from kafka_chaos.history.writer import HistoryWriter
from kafka_chaos.workloads.profile import ProducerProfile
from kafka_chaos.workloads.run import Workload, WorkloadConfig

SETTINGS = {
    "acks=all idempotent": ProducerProfile(acks="all", idempotent=True),
    "acks=1": ProducerProfile(acks="1", idempotent=False),
}


def cpu_seconds() -> float:
    """CPU of this process and of its finished (joined) children, i.e. the harness and its workers."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure(cluster, label: str, profile: ProducerProfile, args, results_dir: Path) -> dict:
    topic = f"bench-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, partitions=args.partitions, replication_factor=3,
                         configs={"min.insync.replicas": "2"})
    history = HistoryWriter(results_dir / topic, {"partitions": args.partitions, "replication_factor": 3,
                                                  "min_insync_replicas": 2, "topic": topic})
    profiles = [profile.named(f"p{i}") for i in range(args.producers)]
    workload = Workload(cluster, history, WorkloadConfig(topic=topic, producers=profiles,
                                                         consumers=args.consumers))
    workload.start()
    cpu0, wall0 = cpu_seconds(), time.monotonic()
    time.sleep(args.seconds)
    workload.stop()
    cpu1, wall1 = cpu_seconds(), time.monotonic()
    t0 = time.monotonic()
    summary = workload.finalize()
    build_s = time.monotonic() - t0

    sends = pq.read_table(history.history_dir / "sends.parquet", columns=["value", "outcome", "t_invoke_ns",
                                                                           "t_complete_ns"])
    counted = sum(read_progress(producer_paths(history.journal_dir, i)["progress"])["invoked"]
                  for i in range(args.producers))
    window_s = (pc.max(sends["t_invoke_ns"]).as_py() - pc.min(sends["t_invoke_ns"]).as_py()) / 1e9
    missing = counted - sends.num_rows
    duplicates = sends.num_rows - pc.count_distinct(sends["value"]).as_py()
    cluster.delete_topics([topic])
    return {"label": label, "sends": sends.num_rows, "ok": summary.ok, "window_s": window_s,
            "sends_per_s": sends.num_rows / window_s, "ok_per_s": summary.ok / window_s,
            "missing": missing, "duplicates": duplicates, "without_outcome": summary.without_outcome,
            "harness_cpu_cores": (cpu1 - cpu0) / (wall1 - wall0),
            "cpu_ms_per_1k": (cpu1 - cpu0) * 1000 / max(1, sends.num_rows) * 1000, "build_s": build_s}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--producers", type=int, default=2, help="producer processes per setting")
    ap.add_argument("--consumers", type=int, default=0, help="live consumers")
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--cluster", help="use this running cluster (kafka-chaos cluster up --name ...) instead of "
                                      "starting one")
    ap.add_argument("--only", choices=sorted(SETTINGS), help="measure one setting only")
    args = ap.parse_args(argv)

    own = args.cluster is None
    cluster = (KafkaCluster(ClusterConfig(name=f"bench{os.getpid()}", min_insync_replicas=2)).up() if own
               else KafkaCluster.attach(args.cluster))
    print(f"Kafka {cluster.version}, 3 brokers, {os.cpu_count()} cores, {args.producers} producer process(es), "
          f"{args.consumers} live consumer(s), {args.seconds:.0f} s per setting, as fast as possible")
    failures = 0
    try:
        with tempfile.TemporaryDirectory(prefix="kafka-chaos-bench-") as tmp:
            for label, profile in SETTINGS.items():
                if args.only and label != args.only:
                    continue
                r = measure(cluster, label, profile, args, Path(tmp))
                complete = r["missing"] == 0 and r["duplicates"] == 0 and r["without_outcome"] == 0
                failures += not complete
                print(f"{label:<20} {r['sends_per_s']:>9,.0f} recorded sends/s  {r['ok_per_s']:>9,.0f} acked/s  "
                      f"({r['sends']:,} sends in {r['window_s']:.1f} s)  harness CPU {r['harness_cpu_cores']:.2f} "
                      f"cores ({r['cpu_ms_per_1k']:.0f} ms per 1k sends)  Parquet build {r['build_s']:.1f} s  history "
                      f"{'complete' if complete else 'INCOMPLETE'} (missing {r['missing']}, duplicates "
                      f"{r['duplicates']}, without outcome {r['without_outcome']})", flush=True)
    finally:
        if own:
            cluster.down()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
