"""The link proxy's plan: which proxy carries which link, and the listeners that route a broker's links through
it (pure functions; the real-broker tests are in test_link_proxy.py)."""
from kafka_chaos.cluster import config as cfg
from kafka_chaos.cluster import linkproxy
from kafka_chaos.cluster.config import ClusterConfig

IPS = {1: "10.0.0.11", 2: "10.0.0.12", 3: "10.0.0.13"}
PROXY = "10.0.0.250"


def test_every_link_has_its_own_proxy_port_and_the_right_upstream():
    specs = linkproxy.proxy_specs(IPS, 9092)
    assert len(specs) == 3 + 6                                  # a client link per broker, a fetch link per pair
    assert len({s.listen_port for s in specs}) == len(specs)
    by_name = {s.name: s for s in specs}
    assert by_name["client-2"].upstream == "10.0.0.12:9092"
    assert by_name["repl-3-1"].upstream == "10.0.0.11:9103"     # follower 3 fetches from leader 1 on R3
    assert by_name["repl-3-1"].listen_port == linkproxy.REPLICATION_PORT_BASE + 31


def test_a_follower_reaches_each_leader_through_its_own_proxy_port():
    for leader in IPS:
        props = linkproxy.broker_listeners(leader, IPS[leader], sorted(IPS), PROXY, 9092)
        advertised = dict(x.split("://") for x in props["advertised.listeners"].split(","))
        assert advertised["PLAINTEXT"] == f"{PROXY}:{linkproxy.CLIENT_PORT_BASE + leader}"
        assert advertised["DIRECT"] == f"{IPS[leader]}:{linkproxy.DIRECT_PORT}"
        assert props["inter.broker.listener.name"] == f"R{leader}"
        for follower in IPS:
            spec = {s.name: s for s in linkproxy.proxy_specs(IPS, 9092)}.get(
                linkproxy.replication_proxy(follower, leader))
            if follower != leader:
                assert advertised[f"R{follower}"] == f"{PROXY}:{spec.listen_port}"


def test_the_listeners_replace_the_plain_ones_in_server_properties():
    props = linkproxy.broker_listeners(1, IPS[1], [1, 2, 3], PROXY, 9092)
    text = cfg.broker_properties(ClusterConfig(link_proxy=True), "4.4.0", 1, IPS[1], {101: "10.0.0.101"},
                                 listeners=props)
    lines = dict(line.split("=", 1) for line in text.splitlines())
    assert lines["inter.broker.listener.name"] == "R1"
    assert lines["advertised.listeners"] == props["advertised.listeners"]
    plain = dict(line.split("=", 1) for line in cfg.broker_properties(
        ClusterConfig(), "4.4.0", 1, IPS[1], {101: "10.0.0.101"}).splitlines())
    assert plain["advertised.listeners"] == f"PLAINTEXT://{IPS[1]}:9092"
