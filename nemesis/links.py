"""Slow links through the cluster's Toxiproxy (cluster/linkproxy.py): latency with jitter, or a bandwidth cap, on
the client and replication links of chosen brokers. For kernels without tc netem (see nemesis/latency.py, which
stays the path where netem exists); the cluster must run with --link-proxy.

A toxic is named after the fault instance, so heal removes exactly its own toxics and nothing else; the sweep
(`nemesis heal`, heal-all) resets the proxy: every toxic gone. Links, as the fault records them:
`["client", B]` is the workload's link to broker B; `[F, L]` is follower F's fetch link to leader L.
"""
from __future__ import annotations

import uuid

from kafka_chaos.base.errors import UsageError
from kafka_chaos.cluster import linkproxy
from kafka_chaos.nemesis.base import Fault, Target

LINK_SETS = ("all", "client", "replication", "fetches")
CLIENT = "client"


def links_of(ids: list[int], brokers: list[int], which: str) -> list[tuple]:
    """The links of brokers `ids`: client (the workload's link to each), fetches (each one's fetches from every other
    broker, i.e. as a follower), replication (fetches both ways), all (client and replication)."""
    out: list[tuple] = []
    for n in ids:
        if which in ("client", "all"):
            out.append((CLIENT, n))
        if which in ("fetches", "replication", "all"):
            out += [(n, leader) for leader in brokers if leader != n]
        if which in ("replication", "all"):
            out += [(f, n) for f in brokers if f != n]
    return list(dict.fromkeys(out))


def proxy_of(link: tuple) -> str:
    src, dst = link
    return linkproxy.client_proxy(dst) if src == CLIENT else linkproxy.replication_proxy(src, dst)


class LinkFault(Fault):
    """A toxic on every chosen link of the target brokers. `toxic` is "latency" (on the responses' direction, so a
    request's round trip grows by about `delay_ms`) or "bandwidth" (`rate_kbps` KB/s each way)."""

    def __init__(self, target: Target, toxic: str, links: str = "all", delay_ms: int = 100, jitter_ms: int = 10,
                 rate_kbps: int = 64, name: str = "link-slow"):
        if links not in LINK_SETS:
            raise UsageError(f"--link {links}: not a set of links", f"use one of {', '.join(LINK_SETS)}")
        if toxic == "latency" and (delay_ms <= 0 or jitter_ms < 0 or jitter_ms > delay_ms):
            raise UsageError(f"{name}: {delay_ms} ms ± {jitter_ms} ms: delay must be > 0, 0 <= jitter <= delay",
                             "use e.g. --delay-ms 200 --jitter-ms 20")
        if toxic == "bandwidth" and rate_kbps <= 0:
            raise UsageError(f"{name}: --rate-kbps {rate_kbps} must be > 0", "use e.g. --rate-kbps 64")
        if toxic not in ("latency", "bandwidth"):
            raise UsageError(f"link toxic '{toxic}' is not one of latency, bandwidth", "use latency or bandwidth")
        super().__init__(name)
        self.target, self.toxic, self.links = target, toxic, links
        self.delay_ms, self.jitter_ms, self.rate_kbps = delay_ms, jitter_ms, rate_kbps

    def _toxics(self) -> list[tuple[str, dict]]:
        """(stream, attributes) of each toxic one link gets."""
        if self.toxic == "latency":
            return [("downstream", {"latency": self.delay_ms, "jitter": self.jitter_ms})]
        return [("upstream", {"rate": self.rate_kbps}), ("downstream", {"rate": self.rate_kbps})]

    def _start(self, cluster) -> None:
        proxy = cluster.link_proxy()                      # UsageError without one: before anything is touched
        ids = self.target.resolve(cluster)
        brokers = [b.id for b in cluster.brokers]
        for i in ids:
            if i not in brokers:
                raise UsageError(f"{self.name}: node {i} is not a broker; only brokers' links are proxied",
                                 f"target brokers: {', '.join(map(str, brokers))}")
        links = links_of(ids, brokers, self.links)
        tag = f"{self.name}-{uuid.uuid4().hex[:8]}"
        added: list[tuple[str, str]] = []
        try:
            for link in links:
                for stream, attributes in self._toxics():
                    name = f"{tag}-{stream}"
                    proxy.add_toxic(proxy_of(link), name, self.toxic, stream, attributes)
                    added.append((proxy_of(link), name))
            details = {"effect": "link", "toxic": self.toxic, "links": [list(lk) for lk in links],
                       "toxic_name": tag, "link_set": self.links}
            details |= ({"delay_ms": self.delay_ms, "jitter_ms": self.jitter_ms} if self.toxic == "latency"
                        else {"rate_kbps": self.rate_kbps})
            self._applied(ids, details | self.target.describe(),
                          lambda: [proxy.remove_toxic(p, name) for p, name in added])
        except BaseException:
            for p, name in added:
                proxy.remove_toxic(p, name)
            raise
