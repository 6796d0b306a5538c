"""Link faults' bad input, and a cluster without the link proxy, fail with a clear UsageError before anything is
touched; which links a fault's link set names."""
from __future__ import annotations

import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.nemesis import registry
from kafka_chaos.nemesis.links import links_of, proxy_of
from kafka_chaos.nemesis.registry import FaultArgs


@pytest.mark.parametrize("name, args, message", [
    ("link-slow", FaultArgs(delay_ms=0), "delay must be > 0"),
    ("link-slow", FaultArgs(delay_ms=100, jitter_ms=200), "jitter <= delay"),
    ("link-bandwidth", FaultArgs(rate_kbps=0), "must be > 0"),
    ("link-slow", FaultArgs(link="sideways"), "not a set of links"),
    ("follower-link-slow", FaultArgs(targets=(1,)), "takes no --target"),
])
def test_bad_link_arguments_are_refused_when_the_fault_is_built(name, args, message):
    with pytest.raises(UsageError, match=message):
        registry.build(name, args)


def test_link_sets_name_client_links_and_fetch_links_by_follower_then_leader():
    brokers = [1, 2, 3]
    assert links_of([2], brokers, "client") == [("client", 2)]
    assert links_of([2], brokers, "fetches") == [(2, 1), (2, 3)]
    assert links_of([2], brokers, "replication") == [(2, 1), (2, 3), (1, 2), (3, 2)]
    assert links_of([2], brokers, "all") == [("client", 2), (2, 1), (2, 3), (1, 2), (3, 2)]
    assert [proxy_of(lk) for lk in links_of([2], brokers, "all")] == \
        ["client-2", "repl-2-1", "repl-2-3", "repl-1-2", "repl-3-2"]


def test_a_link_fault_on_a_cluster_without_the_link_proxy_names_the_option_before_touching_it():
    from kafka_chaos.cluster.config import ClusterConfig
    from kafka_chaos.cluster.kafka_cluster import KafkaCluster
    from kafka_chaos.nemesis.control import Nemesis
    from kafka_chaos.nemesis.events import EventLog

    events = EventLog()
    plain = KafkaCluster(ClusterConfig(name="never-started"))     # refused before any node would be asked
    with pytest.raises(UsageError, match="no link proxy") as e:
        Nemesis(plain, record=events).start(registry.build("link-slow", FaultArgs(targets=(1,))))
    assert "--link-proxy" in e.value.remedy
    assert list(events) == []
