"""Latency needs tc netem. Without it the fault refuses loudly and touches nothing; with it, delay is measurable."""
from __future__ import annotations

import time

import pytest

from kafka_chaos.nemesis import registry
from kafka_chaos.nemesis.latency import NetemUnavailable, netem_available
from kafka_chaos.nemesis.registry import FaultArgs
from tests.nemesis.probes import assert_no_rules_of_ours

pytestmark = pytest.mark.cluster


@pytest.fixture
def netem(cluster):
    ok, answer = netem_available(cluster.node(1))
    return ok, answer


def test_latency_refuses_with_a_clear_error_where_the_kernel_has_no_netem(cluster, nem, events, netem):
    ok, answer = netem
    if ok:
        pytest.skip("this kernel has tc netem: nothing to refuse")
    with pytest.raises(NetemUnavailable, match="latency needs tc netem") as e:
        nem.start(registry.build("latency", FaultArgs(targets=(1,), delay_ms=50)))
    assert "Specified qdisc kind is unknown" in e.value.cause
    assert events == [] and nem.active == []
    assert_no_rules_of_ours(cluster)


def test_latency_delays_packets_and_heal_removes_the_delay(cluster, nem, events, netem):
    ok, answer = netem
    if not ok:
        pytest.skip(f"tc netem is unavailable on this kernel: {answer}")
    a, b = cluster.node(1), cluster.node(2)

    def connect_s():
        t0 = time.monotonic()
        b.exec(["bash", "-c", f"</dev/tcp/{a.ip}/9092"])
        return time.monotonic() - t0

    base = connect_s()
    fault = nem.start(registry.build("latency", FaultArgs(targets=(1,), delay_ms=300, jitter_ms=0)))
    assert events[0].details == {"effect": "latency", "delay_ms": 300, "jitter_ms": 0, "target": "nodes"}
    assert connect_s() > base + 0.25
    nem.heal(fault)
    assert connect_s() < base + 0.2
