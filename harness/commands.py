"""`kafka-chaos setup` and `kafka-chaos cluster up | status | down`."""
from __future__ import annotations

import argparse

from kafka_chaos.cluster.config import ClusterConfig
from kafka_chaos.harness.cluster_options import ClusterChoice, add_cluster_options, explicit_flags


def add_name_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default="kafka-chaos", help="cluster name (default kafka-chaos)")


def register(sub) -> None:
    p = sub.add_parser("setup", help="fetch Kafka's jars from Maven Central and build the broker image")
    p.add_argument("--kafka-version", metavar="V", help="Kafka release (default: newest 4.x on Maven Central)")
    p.add_argument("--metadata", choices=("kraft", "zookeeper"),
                   help="the metadata mode to run (checked against the release: ZooKeeper mode up to 3.9, KRaft from "
                        "3.9); one image serves both")
    p.add_argument("--image", help="check this image is usable instead of building one")
    p.add_argument("--base-image", metavar="IMAGE",
                   help="build the base FROM this registry image, e.g. debian:12-slim (env KAFKA_CHAOS_BASE_IMAGE)")
    p.add_argument("--debian-mirror", metavar="URL",
                   help="debootstrap the base from this Debian mirror (env KAFKA_CHAOS_DEBIAN_MIRROR; default: the "
                        "host's on Debian, else a registry base or http://deb.debian.org/debian)")
    p.add_argument("--plan", action="store_true",
                   help="resolve the jars and print the image tags (base=..., broker=...) without building")
    p.set_defaults(func=_cmd_setup)

    cluster = sub.add_parser("cluster", help="start, inspect and remove a local Kafka cluster")
    csub = cluster.add_subparsers(dest="cluster_command", metavar="ACTION")
    csub.required = True
    up = csub.add_parser("up", help="start a cluster that stays up until `cluster down`")
    add_name_option(up)
    add_cluster_options(up, ClusterConfig())
    up.set_defaults(func=_cmd_cluster_up)
    st = csub.add_parser("status", help="nodes, their state, and each partition's leader and ISR")
    add_name_option(st)
    st.set_defaults(func=_cmd_cluster_status)
    down = csub.add_parser("down", help="remove the cluster's containers and network")
    add_name_option(down)
    down.add_argument("--all", action="store_true", help="remove everything kafka-chaos left on this engine")
    down.set_defaults(func=_cmd_cluster_down)


def _cmd_setup(args) -> int:
    from kafka_chaos.cluster import distribution, image
    from kafka_chaos.cluster.engine import docker_client

    client = docker_client()
    if args.image:
        print(image.use_external_image(client, args.image))
        return 0
    from kafka_chaos.cluster.base_source import BaseRequest
    from kafka_chaos.harness.live import setup_progress

    request = BaseRequest.from_env(args.base_image, args.debian_mirror)
    from kafka_chaos.cluster.config import metadata_mode

    if args.kafka_version:                 # a mode the release lacks fails before any download
        distribution.parse_version(args.kafka_version)
        metadata_mode(args.kafka_version, args.metadata)
    with setup_progress():
        dist = distribution.resolve(args.kafka_version)
        mode = metadata_mode(dist.version, args.metadata)
        if args.plan:
            base, broker = image.planned_tags(client, dist, request)
            print(f"base={base}\nbroker={broker}")
            return 0
        print(f"Kafka {dist.version} ({mode} metadata): {len(dist.jar_names())} jars in {dist.libs}")
        from kafka_chaos.workloads.java_client import build

        print(f"Java client: kafka-clients {dist.version} compiled in {build(dist.version).classpath.split(':')[0]}")
        print(f"image: {image.ensure_broker_image(client, dist, request)}")
    return 0


def _cmd_cluster_up(args) -> int:
    from kafka_chaos.cluster.kafka_cluster import KafkaCluster
    from kafka_chaos.cluster.settings import check_topic_settings, parse_settings

    topic = parse_settings(args.topic_config, "--topic-config")
    check_topic_settings(topic)
    config = ClusterChoice.from_args(args).apply(
        ClusterConfig(name=args.name, kafka_version=args.kafka_version, topic_settings=topic),
        explicit_flags(args.min_isr, args.unclean))
    from kafka_chaos.harness.live import setup_progress

    with setup_progress():
        cluster = KafkaCluster(config, persistent=True).up()
    print(cluster.status())
    print(f"\nremove it with: kafka-chaos cluster down --name {config.name}")
    return 0


def _cmd_cluster_status(args) -> int:
    from kafka_chaos.cluster.kafka_cluster import KafkaCluster

    print(KafkaCluster.attach(args.name).status())
    return 0


def _cmd_cluster_down(args) -> int:
    from kafka_chaos.base.errors import UsageError
    from kafka_chaos.cluster.engine import docker_client
    from kafka_chaos.cluster.kafka_cluster import LABEL_CLUSTER, KafkaCluster, remove_all
    from kafka_chaos.cluster.reaper import remove_labelled

    if args.all:
        docker_client()
        print(f"removed {remove_all()} container(s) made by kafka-chaos")
        return 0
    try:
        cluster = KafkaCluster.attach(args.name)
    except UsageError:
        # no network left: remove whatever containers still carry the name (a half-made or broken cluster)
        n = remove_labelled(f"{LABEL_CLUSTER}={args.name}")
        if not n:
            raise
        print(f"cluster {args.name}: removed {n} leftover container(s)")
        return 0
    n = len(cluster.nodes)
    cluster.down()
    print(f"cluster {args.name}: removed {n} node(s) and network {cluster.network_name}")
    return 0
