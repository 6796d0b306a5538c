"""The broker image, built without any registry.

Base: a Debian rootfs made by debootstrap (minbase + a JRE, iptables, iproute2, procps), brought in with
`docker import`. Broker layer: docker/Dockerfile on top (jars, log configs, the launch script). Both are tagged by a
hash of their inputs, so they are rebuilt only when an input changes.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import docker.errors

import docker
from base.errors import EnvironmentProblem, UsageError
from base.paths import DOCKER_CONTEXT, cache_dir
from cluster.distribution import KafkaDistribution

log = logging.getLogger(__name__)

BASE_PACKAGES = ("openjdk-17-jre-headless", "iptables", "iproute2", "procps", "ca-certificates")
BASE_REPO, BROKER_REPO = "kafka-chaos-base", "kafka-chaos-broker"
CONTEXT_FILES = ("Dockerfile", "launch", "cds-archive", "log4j2.xml", "log4j.properties")
IMAGE_LABEL = "kafka-chaos.image"


@dataclass(frozen=True)
class DebianSource:
    suite: str
    mirror: str


def _sha(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def host_debian_source() -> DebianSource:
    """The suite and mirror this host's apt uses: debootstrap reaches the same registry apt does."""
    suite = ""
    osr = Path("/etc/os-release")
    if osr.exists():
        m = re.search(r"^VERSION_CODENAME=(\S+)", osr.read_text(), re.M)
        suite = m.group(1).strip('"') if m else ""
    mirror = ""
    sources = sorted(Path("/etc/apt/sources.list.d").glob("*.sources")) + [Path("/etc/apt/sources.list")]
    for f in sources:
        if not f.exists():
            continue
        text = f.read_text()
        for m in re.finditer(r"^(?:URIs:\s*|deb\s+(?:\[[^\]]*\]\s+)?)(\S+)", text, re.M):
            uri = m.group(1)
            if "security" not in uri and uri.startswith(("http://", "https://", "file:/")):
                mirror = uri
                break
        if mirror:
            break
    if not suite or not mirror:
        raise EnvironmentProblem(
            "cannot build the base image: this host's apt sources name no Debian mirror and suite",
            "run on Debian, or pass --image with a Kafka image your Docker can pull (e.g. apache/kafka:4.4.0)",
        )
    return DebianSource(suite, mirror)


def base_tag(source: DebianSource) -> str:
    return f"{BASE_REPO}:{source.suite}-{_sha(source.suite, 'minbase', *BASE_PACKAGES)}"


def broker_tag(dist: KafkaDistribution, base: str) -> str:
    files = [(DOCKER_CONTEXT / f).read_text() for f in CONTEXT_FILES]
    return f"{BROKER_REPO}:{dist.version}-{_sha(base, dist.version, *dist.jar_names(), *files)}"


def _image_exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def ensure_base_image(client: docker.DockerClient) -> str:
    source = host_debian_source()
    tag = base_tag(source)
    if _image_exists(client, tag):
        return tag
    if os.geteuid() != 0:
        raise EnvironmentProblem("debootstrap must run as root to build the base image", "rerun as root (sudo)")
    if not shutil.which("debootstrap"):
        raise EnvironmentProblem("debootstrap is not installed", "apt-get install -y debootstrap")
    rootfs = Path(tempfile.mkdtemp(prefix="rootfs-", dir=cache_dir()))
    try:
        log.info("debootstrap %s from %s into %s (about a minute)", source.suite, source.mirror, rootfs)
        proc = subprocess.run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
             source.suite, str(rootfs), source.mirror],
            capture_output=True, text=True,
        )
        if proc.returncode != 0:
            raise EnvironmentProblem(
                f"debootstrap {source.suite} failed: {(proc.stdout + proc.stderr).strip().splitlines()[-3:]}",
                f"check that {source.mirror} is reachable (apt-get update works) and the disk has 1 GB free",
            )
        shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
        log.info("docker import %s", tag)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(
            ["docker", "import", "--change", "ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64",
             "--change", 'CMD ["/bin/bash"]', "-", tag],
            stdin=tar.stdout, capture_output=True, text=True,
        )
        tar.wait()
        if imp.returncode != 0:
            raise EnvironmentProblem(f"docker import failed: {imp.stderr.strip()}", "check `docker info` works")
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
    return tag


def ensure_broker_image(client: docker.DockerClient, dist: KafkaDistribution) -> str:
    """The image tag for `dist`, building base and broker layers if their inputs changed."""
    base = ensure_base_image(client)
    tag = broker_tag(dist, base)
    if _image_exists(client, tag):
        return tag
    ctx = Path(tempfile.mkdtemp(prefix=f"build-{dist.version}-", dir=cache_dir()))
    try:
        for f in CONTEXT_FILES:
            shutil.copy2(DOCKER_CONTEXT / f, ctx / f)
        (ctx / "libs").mkdir()
        for jar in dist.libs.glob("*.jar"):
            try:
                os.link(jar, ctx / "libs" / jar.name)
            except OSError:
                shutil.copy2(jar, ctx / "libs" / jar.name)
        log.info("building %s", tag)
        try:
            client.images.build(
                path=str(ctx), tag=tag, rm=True, pull=False,
                buildargs={"BASE_IMAGE": base, "LOG4J_OPTS": dist.log4j_opts},
                labels={IMAGE_LABEL: "broker", "kafka-chaos.kafka-version": dist.version},
            )
        except docker.errors.BuildError as e:
            lines = [str(x.get("stream") or x.get("error") or "").strip() for x in e.build_log]
            raise EnvironmentProblem(f"building {tag} failed: {' | '.join(lines[-5:])}", "rerun with -v") from e
    finally:
        shutil.rmtree(ctx, ignore_errors=True)
    _remove_superseded(client, tag, f"{BROKER_REPO}:{dist.version}-")
    return tag


def _remove_superseded(client: docker.DockerClient, keep: str, prefix: str) -> None:
    """Older builds of the same version (other input hashes) only take disk space."""
    for img in client.images.list(name=BROKER_REPO):
        for t in img.tags:
            if t.startswith(prefix) and t != keep:
                try:
                    client.images.remove(t)
                except docker.errors.APIError as e:   # still used by a container: leave it
                    log.debug("keeping %s: %s", t, e)


def use_external_image(client: docker.DockerClient, image: str) -> str:
    """An image given with --image (e.g. apache/kafka:4.4.0): used if present or pullable."""
    if _image_exists(client, image):
        return image
    try:
        client.images.pull(image)
        return image
    except docker.errors.APIError as e:
        raise UsageError(
            f"image {image} is not present and cannot be pulled ({e.explanation or e})",
            "omit --image to build the broker image locally from Maven Central jars",
        ) from e
