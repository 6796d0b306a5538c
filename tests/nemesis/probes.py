"""Probes that observe faults from outside the nemesis: reachability from inside the nodes (bash /dev/tcp) and from
the client host, leftovers of ours, and a health wait that tolerates brokers catching up after a restart."""
from __future__ import annotations

import socket

from kafka_chaos.cluster.config import BROKER_PORT, CONTROLLER_PORT
from kafka_chaos.nemesis import netrules


def wait_healthy(cluster, topic: str, timeout: float = 90) -> None:
    """cluster.wait_healthy, tolerating the "unknown topic" a just-restarted broker answers until it catches up."""
    from kafka_chaos.base.errors import UsageError
    from kafka_chaos.base.waiting import wait_until

    def healthy():
        try:
            return cluster.is_healthy(topic)
        except UsageError:
            return False

    wait_until(healthy, timeout, lambda: f"{topic} not healthy after {timeout} s: {cluster._describe_or_error(topic)}")


def port_of(node) -> int:
    return BROKER_PORT if node.role == "broker" else CONTROLLER_PORT


def reachable_from(src, dsts, timeout_s: float = 1.0) -> dict[int, bool]:
    """Which of `dsts` a TCP connect from inside `src` reaches within `timeout_s` (all probed in parallel)."""
    script = " ".join(
        f"(timeout {timeout_s} bash -c '</dev/tcp/{d.ip}/{port_of(d)}' 2>/dev/null && echo {d.id}:1 || echo {d.id}:0) &"
        for d in dsts) + " wait"
    _, out = src.exec(["bash", "-c", script], check=False)
    result = dict(line.split(":") for line in out.split() if ":" in line)
    return {d.id: result.get(str(d.id)) == "1" for d in dsts}


def client_reaches(node, timeout_s: float = 1.0) -> bool:
    """A TCP connect from the harness host (the workload's side) to the node's listener."""
    try:
        with socket.create_connection((node.ip, port_of(node)), timeout=timeout_s):
            return True
    except OSError:
        return False


def assert_no_rules_of_ours(cluster) -> None:
    for n in cluster.nodes:
        assert n.state() == "running", f"{n} is {n.state()}"
        assert netrules.rules_of_ours(n) == [], f"rules of ours left on {n}"
