"""A stand-in harness for the crash tests: runs a workload against a running cluster until it is killed.

Usage: python crash_harness.py CLUSTER_NAME TOPIC RUN_DIR. Prints one JSON line {"pids": {...}} once every worker
is producing, then waits to be killed (SIGKILL) or interrupted (SIGINT: stops the workload and finalizes it).
"""
from __future__ import annotations

import json
import sys
import time

from kafka_chaos.cluster.kafka_cluster import KafkaCluster
from kafka_chaos.history.writer import HistoryWriter
from kafka_chaos.workloads.profile import ProducerProfile
from kafka_chaos.workloads.run import Workload, WorkloadConfig


def main(cluster_name: str, topic: str, run_dir: str) -> None:
    cluster = KafkaCluster.attach(cluster_name)
    history = HistoryWriter(run_dir, {"partitions": 3, "replication_factor": 3, "min_insync_replicas": 2})
    config = WorkloadConfig(topic=topic, consumers=1, producers=[
        ProducerProfile("idem", acks="all", idempotent=True, rate=1500),
        ProducerProfile("one", acks="1", idempotent=False, rate=1500)])
    workload = Workload(cluster, history, config)
    workload.start()
    print(json.dumps({"pids": workload.worker_pids()}), flush=True)
    try:
        while True:
            time.sleep(0.2)
    except KeyboardInterrupt:
        workload.stop()
        print(json.dumps({"finalized": str(workload.finalize())}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
