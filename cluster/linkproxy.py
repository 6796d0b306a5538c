"""Toxiproxy on the cluster's network: slow and lossy links without tc netem.

Where a cluster is started with `link_proxy`, one small container (`kc-<name>-proxy`, built locally FROM scratch
around a static toxiproxy-server that scripts/toxiproxy.sh builds from its Go module) sits on the path of
 - every client link: the brokers' PLAINTEXT listener is advertised at the proxy (one proxy port per broker), so
   the workload's bootstrap and every broker address in metadata lead through it;
 - every replication link, per pair: broker F's inter-broker listener is `R<F>`, which every broker B binds on
   9100+F and advertises at the proxy's port for (F, B). F's fetches from leader L therefore go F -> proxy
   "repl-F-L" -> L, and a toxic there slows exactly the follower F's fetches from L.
The controllers' listener is not proxied (heartbeats and metadata fetches go straight to the controller), and the
harness's own admin client bootstraps on a DIRECT listener (9094), so sampling the ISR is never slowed.

The container carries the run's labels like the nodes do, so `cluster down`, the reaper (even after kill -9 of the
run) and `cluster down --all` remove it with them; its toxics live in its memory and die with it.
"""
from __future__ import annotations

import io
import json
import logging
import tarfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import docker.errors

from kafka_chaos.base.errors import EnvironmentProblem, HarnessError, UsageError
from kafka_chaos.base.paths import cache_dir
from kafka_chaos.base.waiting import WaitTimeout, wait_until

log = logging.getLogger(__name__)

VERSION = "v2.12.0"                        # scripts/toxiproxy.sh builds this one
API_PORT = 8474
HOST_INDEX = 250                           # the proxy's address: the subnet's 250th host (nodes use 11.., 101.., 201)
ROLE = "link-proxy"
IMAGE_REPO = "kafka-chaos-toxiproxy"
CLIENT_PORT_BASE = 19000                   # client link to broker B: 19000 + B
REPLICATION_PORT_BASE = 19100              # replication link F -> L: 19100 + 10 F + L
DIRECT_PORT = 9094                         # brokers' unproxied listener for the harness's admin client
REPLICATION_BIND_BASE = 9100               # broker B binds R<F> on 9100 + F
DOCKERFILE = 'FROM scratch\nCOPY toxiproxy-server /toxiproxy-server\n' \
             'ENTRYPOINT ["/toxiproxy-server", "-host", "0.0.0.0", "-port", "8474"]\n'


class ProxyError(HarnessError):
    """Toxiproxy's API refused a request, or did not answer."""


def binary_path() -> Path:
    return cache_dir() / "toxiproxy" / VERSION / "toxiproxy-server"


def client_proxy(broker: int) -> str:
    return f"client-{broker}"


def replication_proxy(follower: int, leader: int) -> str:
    return f"repl-{follower}-{leader}"


@dataclass(frozen=True)
class ProxySpec:
    name: str
    listen_port: int
    upstream: str

    def as_api(self) -> dict:
        return {"name": self.name, "listen": f"0.0.0.0:{self.listen_port}", "upstream": self.upstream,
                "enabled": True}


def proxy_specs(broker_ips: dict[int, str], port: int) -> list[ProxySpec]:
    """Every link the proxy carries: one client proxy per broker, one replication proxy per ordered pair."""
    specs = [ProxySpec(client_proxy(b), CLIENT_PORT_BASE + b, f"{ip}:{port}") for b, ip in sorted(broker_ips.items())]
    for f in sorted(broker_ips):
        for leader, ip in sorted(broker_ips.items()):
            if f != leader:
                specs.append(ProxySpec(replication_proxy(f, leader), REPLICATION_PORT_BASE + 10 * f + leader,
                                       f"{ip}:{REPLICATION_BIND_BASE + f}"))
    return specs


def broker_listeners(node_id: int, ip: str, brokers: list[int], proxy_ip: str, port: int) -> dict[str, str]:
    """A broker's listener settings when its links go through the proxy (see the module's docstring)."""
    names = [f"R{f}" for f in brokers]
    listeners = [f"PLAINTEXT://0.0.0.0:{port}", f"DIRECT://0.0.0.0:{DIRECT_PORT}"] + \
        [f"R{f}://0.0.0.0:{REPLICATION_BIND_BASE + f}" for f in brokers]
    advertised = [f"PLAINTEXT://{proxy_ip}:{CLIENT_PORT_BASE + node_id}", f"DIRECT://{ip}:{DIRECT_PORT}"]
    for f in brokers:
        # A broker never fetches from itself; its own R<F> is advertised at its own address (it must exist: the
        # broker's inter-broker listener has to be one of its advertised listeners).
        advertised.append(f"R{f}://{ip}:{REPLICATION_BIND_BASE + f}" if f == node_id
                          else f"R{f}://{proxy_ip}:{REPLICATION_PORT_BASE + 10 * f + node_id}")
    return {
        "listeners": ",".join(listeners),
        "advertised.listeners": ",".join(advertised),
        "inter.broker.listener.name": f"R{node_id}",
        "listener.security.protocol.map": ",".join(
            ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT", "DIRECT:PLAINTEXT"] + [f"{n}:PLAINTEXT" for n in names]),
    }


def ensure_image(client) -> str:
    """The proxy's image, built once per binary (FROM scratch: nothing is pulled)."""
    binary = binary_path()
    if not binary.is_file():
        raise EnvironmentProblem(f"toxiproxy {VERSION} is not built ({binary} is missing): link faults need it",
                                 "run `bash scripts/setup.sh` (or `bash scripts/toxiproxy.sh --install`)")
    data = binary.read_bytes()
    import hashlib

    tag = f"{IMAGE_REPO}:{VERSION}-{hashlib.sha256(data).hexdigest()[:12]}"
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, content, mode in (("Dockerfile", DOCKERFILE.encode(), 0o644), ("toxiproxy-server", data, 0o755)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(content), mode
            tar.addfile(info, io.BytesIO(content))
    buf.seek(0)
    log.info("building %s", tag)
    try:
        client.images.build(fileobj=buf, custom_context=True, tag=tag, rm=True,
                            labels={"kafka-chaos.image": "toxiproxy"})
    except docker.errors.BuildError as e:
        raise EnvironmentProblem(f"building {tag} failed: {e}", "check the Docker engine (docker build)") from e
    return tag


class LinkProxy:
    """Toxiproxy's HTTP API at `ip`, and the container it runs in."""

    def __init__(self, ip: str, container_name: str):
        self.ip, self.container_name = ip, container_name

    @property
    def url(self) -> str:
        return f"http://{self.ip}:{API_PORT}"

    def _call(self, method: str, path: str, body=None, timeout: float = 10):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode()
        except urllib.error.HTTPError as e:
            raise ProxyError(f"toxiproxy {method} {path}: {e.code} {e.read().decode(errors='replace').strip()}",
                             "see the proxy container's log (docker logs " + self.container_name + ")") from e
        except (urllib.error.URLError, OSError) as e:
            raise ProxyError(f"toxiproxy at {self.url} does not answer ({method} {path}): {e}",
                             f"is the container {self.container_name} running?") from e
        return json.loads(text) if text.strip() else None

    def version(self) -> str:
        return str(self._call("GET", "/version"))

    def populate(self, specs: list[ProxySpec]) -> None:
        self._call("POST", "/populate", [s.as_api() for s in specs])

    def proxies(self) -> dict:
        return self._call("GET", "/proxies")

    def toxics(self, proxy: str) -> list[dict]:
        return self._call("GET", f"/proxies/{proxy}/toxics")

    def add_toxic(self, proxy: str, name: str, kind: str, stream: str, attributes: dict) -> None:
        if proxy not in self.proxies():
            raise UsageError(f"the link proxy has no link '{proxy}'", "see `kafka-chaos nemesis list`")
        self._call("POST", f"/proxies/{proxy}/toxics",
                   {"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attributes})

    def remove_toxic(self, proxy: str, name: str) -> None:
        """Remove one toxic; a no-op when it is gone already (heal is idempotent)."""
        if any(t["name"] == name for t in self.toxics(proxy)):
            self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def reset(self) -> None:
        """Every proxy enabled and no toxic anywhere (the sweep's baseline)."""
        self._call("POST", "/reset")

    def all_toxics(self) -> dict[str, list[dict]]:
        return {name: p.get("toxics") or [] for name, p in self.proxies().items()}


def container_name(cluster: str) -> str:
    return f"kc-{cluster}-proxy"


def status_row(client, name: str, ip: str) -> str:
    """The proxy as a row of `cluster status`: its container's state and the toxics it applies now (a link fault in
    force, or one a crashed run left behind)."""
    try:
        state = client.containers.get(name).status
    except docker.errors.NotFound:
        state = "missing"
    toxics = ""
    if state == "running":
        try:
            active = [f"{link} {t['type']} ({t['name']})" for link, ts in
                      sorted(LinkProxy(ip, name).all_toxics().items()) for t in ts]
            toxics = f"  toxics: {', '.join(active) if active else 'none'}"
        except ProxyError as e:
            toxics = f"  toxics: cannot list them ({e.cause})"
    return f"{'-':>6}  {ROLE:<10}  {state:<8}  {ip:<15}  {name}{toxics}"


def start(client, image_tag: str, network: str, name: str, ip: str, labels: dict[str, str],
          specs: list[ProxySpec], timeout: float = 30) -> LinkProxy:
    """Run the proxy container on the cluster's network and create every link; the caller's labels make it go
    with the cluster."""
    client.containers.run(
        image_tag, name=name, hostname=name, detach=True, network=network, mem_limit="128m",
        labels=labels | {"kafka-chaos.role": ROLE, "kafka-chaos.node-id": "0"},
        networking_config={network: client.api.create_endpoint_config(ipv4_address=ip)},
    )
    proxy = LinkProxy(ip, name)

    def answers():
        try:
            return proxy.version()
        except ProxyError:
            return None
    try:
        wait_until(answers, timeout, lambda: f"the link proxy {name} did not answer on {proxy.url} in {timeout} s")
    except WaitTimeout as e:
        raise EnvironmentProblem(str(e), f"see `docker logs {name}`") from e
    proxy.populate(specs)
    return proxy
