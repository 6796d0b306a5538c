"""Fixtures and probes for nemesis tests: a Nemesis that records into a list and heals all at teardown, and
reachability probes that observe a cut from inside the nodes (bash /dev/tcp) and from the client host."""
from __future__ import annotations

import socket

import pytest

from harness.config import BROKER_PORT, CONTROLLER_PORT
from nemesis import netrules
from nemesis.control import Nemesis
from nemesis.events import EventLog


@pytest.fixture
def events() -> EventLog:
    return EventLog()


@pytest.fixture
def nem(cluster, events):
    """A Nemesis on the shared cluster; whatever the test did, heal-all runs and must leave nothing behind."""
    n = Nemesis(cluster, record=events)
    yield n
    problems = n.heal_all()
    assert not problems, problems


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
