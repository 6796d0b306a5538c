"""Cluster set-up and start-up times: cold setup (jars + image), warm `cluster up` until every broker is ready,
and `cluster down`. Target: a warm 3-broker + controller `up` in <= 20 s.

    .venv/bin/python bench/cluster_bench.py [--cold] [--repeat 3] [--kafka-version V]

--cold first removes the cached jars and the kafka-chaos images (Maven's ~/.m2 stays: that is Maven's cache).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

from kafka_chaos.cluster import distribution, image
from kafka_chaos.cluster.config import ClusterConfig
from kafka_chaos.cluster.engine import docker_client
from kafka_chaos.cluster.kafka_cluster import KafkaCluster


def cold_setup(version: str | None) -> tuple[str, float, float]:
    client = docker_client()
    for img in client.images.list():
        if any(t.startswith((image.BROKER_REPO, image.BASE_REPO)) for t in img.tags):
            client.images.remove(img.id, force=True)
    os.environ["KAFKA_CHAOS_CACHE"] = tempfile.mkdtemp(prefix="kc-cold-")
    t0 = time.perf_counter()
    dist = distribution.resolve(version)
    t1 = time.perf_counter()
    image.ensure_broker_image(client, dist)
    t2 = time.perf_counter()
    return dist.version, t1 - t0, t2 - t1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kafka-version")
    args = ap.parse_args()
    if args.cold:
        version, jars, img = cold_setup(args.kafka_version)
        print(f"cold setup, Kafka {version}: jars {jars:.1f} s, image (debootstrap + import + broker layer) "
              f"{img:.1f} s, total {jars + img:.1f} s")
    ups, downs = [], []
    for i in range(args.repeat):
        cluster = KafkaCluster(ClusterConfig(name=f"bench{os.getpid()}", kafka_version=args.kafka_version))
        t0 = time.perf_counter()
        cluster.up()
        ups.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        cluster.down()
        downs.append(time.perf_counter() - t0)
        print(f"run {i + 1}: up {ups[-1]:.1f} s, down {downs[-1]:.1f} s")
    print(f"warm `cluster up` (3 brokers + 1 controller, every broker ready): median {statistics.median(ups):.1f} s "
          f"(min {min(ups):.1f}, max {max(ups):.1f}); target <= 20 s")
    print(f"`cluster down`: median {statistics.median(downs):.1f} s")
    if args.cold:
        shutil.rmtree(os.environ["KAFKA_CHAOS_CACHE"], ignore_errors=True)


if __name__ == "__main__":
    main()
