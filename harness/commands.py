"""`kafka-chaos setup` and `kafka-chaos cluster up | status | down`."""
from __future__ import annotations

import argparse

from cluster.config import ClusterConfig


def add_cluster_options(p: argparse.ArgumentParser) -> None:
    """Options shared by `cluster up` and `run`."""
    p.add_argument("--kafka-version", metavar="V", help="Kafka release (default: newest 4.x on Maven Central)")
    p.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    p.add_argument("--controllers", type=int, default=1, choices=(1, 3), help="dedicated KRaft controllers")
    p.add_argument("--image", help="use this image instead of building one (e.g. apache/kafka:4.3.1)")
    p.add_argument("--subnet", help="the cluster network's subnet (default: a free /24 in 172.29.0.0/16)")


def add_name_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default="kafka-chaos", help="cluster name (default kafka-chaos)")


def register(sub) -> None:
    p = sub.add_parser("setup", help="fetch Kafka's jars from Maven Central and build the broker image")
    p.add_argument("--kafka-version", metavar="V", help="Kafka release (default: newest 4.x on Maven Central)")
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
    add_cluster_options(up)
    up.add_argument("--min-isr", type=int, default=1, help="min.insync.replicas (default 1, Kafka's default)")
    up.add_argument("--unclean", action=argparse.BooleanOptionalAction, default=False,
                    help="unclean.leader.election.enable")
    up.add_argument("--elr", action=argparse.BooleanOptionalAction, default=None,
                    help="eligible leader replicas (4.0+; default: the version's default)")
    up.add_argument("--replica-lag-ms", type=int, default=10000, help="replica.lag.time.max.ms (default 10000)")
    up.add_argument("--session-timeout-ms", type=int, default=9000, help="broker.session.timeout.ms")
    up.set_defaults(func=_cmd_cluster_up)
    st = csub.add_parser("status", help="nodes, their state, and each partition's leader and ISR")
    add_name_option(st)
    st.set_defaults(func=_cmd_cluster_status)
    down = csub.add_parser("down", help="remove the cluster's containers and network")
    add_name_option(down)
    down.add_argument("--all", action="store_true", help="remove everything kafka-chaos left on this engine")
    down.set_defaults(func=_cmd_cluster_down)


def _cmd_setup(args) -> int:
    from cluster import distribution, image
    from cluster.engine import docker_client

    client = docker_client()
    if args.image:
        print(image.use_external_image(client, args.image))
        return 0
    from cluster.base_source import BaseRequest
    from harness.live import setup_progress

    request = BaseRequest.from_env(args.base_image, args.debian_mirror)
    with setup_progress():
        dist = distribution.resolve(args.kafka_version)
        if args.plan:
            base, broker = image.planned_tags(client, dist, request)
            print(f"base={base}\nbroker={broker}")
            return 0
        print(f"Kafka {dist.version}: {len(dist.jar_names())} jars in {dist.libs}")
        print(f"image: {image.ensure_broker_image(client, dist, request)}")
    return 0


def _cmd_cluster_up(args) -> int:
    from cluster.kafka_cluster import KafkaCluster

    config = ClusterConfig(
        name=args.name, kafka_version=args.kafka_version, brokers=args.brokers, controllers=args.controllers,
        min_insync_replicas=args.min_isr, unclean_leader_election=args.unclean, elr=args.elr,
        replica_lag_time_max_ms=args.replica_lag_ms, broker_session_timeout_ms=args.session_timeout_ms,
        subnet=args.subnet, image=args.image,
    )
    from harness.live import setup_progress

    with setup_progress():
        cluster = KafkaCluster(config, persistent=True).up()
    print(cluster.status())
    print(f"\nremove it with: kafka-chaos cluster down --name {config.name}")
    return 0


def _cmd_cluster_status(args) -> int:
    from cluster.kafka_cluster import KafkaCluster

    print(KafkaCluster.attach(args.name).status())
    return 0


def _cmd_cluster_down(args) -> int:
    from base.errors import UsageError
    from cluster.engine import docker_client
    from cluster.kafka_cluster import LABEL_CLUSTER, KafkaCluster, remove_all
    from cluster.reaper import remove_labelled

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
