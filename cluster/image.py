"""The broker image, built without needing any particular host.

Base: Debian with a JRE, iptables, iproute2, procps; made by debootstrap and brought in through the Docker SDK's
import, or FROM a registry image (debian:12-slim) where a registry answers. Which one is decided by
`cluster.base_source.choose_base` (the host's apt sources and the user's options) and said in one line.
Broker layer: docker/Dockerfile on top (jars, log configs, the launch script). Both are tagged by a hash of their
inputs, so they are rebuilt only when an input changes.
"""
from __future__ import annotations

import hashlib
import io
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import docker.errors

import docker
from kafka_chaos.base.errors import EnvironmentProblem, UsageError
from kafka_chaos.base.paths import DOCKER_CONTEXT, cache_dir
from kafka_chaos.base.progress import Step, step
from kafka_chaos.cluster.base_source import (
    DEBOOTSTRAP,
    DEFAULT_MIRROR,
    DEFAULT_SUITE,
    MIRROR_ENV,
    REGISTRY,
    BasePlan,
    BaseRequest,
    choose_base,
    mirror_problem,
    read_host_apt,
)
from kafka_chaos.cluster.distribution import KafkaDistribution

log = logging.getLogger(__name__)

BASE_PACKAGES = ("openjdk-17-jre-headless", "iptables", "iproute2", "procps", "ca-certificates")
BASE_REPO, BROKER_REPO = "kafka-chaos-base", "kafka-chaos-broker"
CONTEXT_FILES = ("Dockerfile", "launch", "cds-archive", "log4j2.xml", "log4j.properties")
IMAGE_LABEL = "kafka-chaos.image"
JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
BASE_CHANGES = [f"ENV JAVA_HOME={JAVA_HOME}", 'CMD ["/bin/bash"]']
REGISTRY_DOCKERFILE = """FROM {image}
RUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends {packages} \\
    && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME={java_home}
CMD ["/bin/bash"]
"""


def _sha(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def plan_base(client: docker.DockerClient, request: BaseRequest | None = None, root: Path = Path("/")) -> BasePlan:
    """Where the base comes from on this host; the registry is asked only when the choice depends on it."""
    return choose_base(read_host_apt(root), request or BaseRequest.from_env(), lambda i: _registry_error(client, i))


def _registry_error(client: docker.DockerClient, image: str) -> str | None:
    """None if `image` is here, or the base built from it is (CI loads that from its cache), or it can be pulled."""
    if _image_exists(client, image) or _image_exists(client, base_tag(BasePlan(REGISTRY, DEFAULT_SUITE, image, ""))):
        return None
    try:
        client.images.pull(image)
        return None
    except docker.errors.APIError as e:
        return str(e.explanation or e)


def base_tag(plan: BasePlan) -> str:
    if plan.method == DEBOOTSTRAP:            # the mirror is not an input: any mirror serves the same suite
        return f"{BASE_REPO}:{plan.suite}-{_sha(plan.suite, 'minbase', *BASE_PACKAGES)}"
    return f"{BASE_REPO}:{plan.suite}-{_sha(plan.source, 'registry', *BASE_PACKAGES)}"


def broker_tag(dist: KafkaDistribution, base: str) -> str:
    files = [(DOCKER_CONTEXT / f).read_text() for f in CONTEXT_FILES]
    return f"{BROKER_REPO}:{dist.version}-{_sha(base, dist.version, *dist.jar_names(), *files)}"


def planned_tags(client: docker.DockerClient, dist: KafkaDistribution,
                 request: BaseRequest | None = None) -> tuple[str, str]:
    """The base and broker tags `ensure_broker_image` would give, without building (CI keys its image cache by
    them)."""
    plan = plan_base(client, request)
    log.info("%s", plan.describe())
    base = base_tag(plan)
    return base, broker_tag(dist, base)


def _image_exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def ensure_base_image(client: docker.DockerClient, request: BaseRequest | None = None) -> str:
    plan = plan_base(client, request)
    tag = base_tag(plan)
    if _image_exists(client, tag):
        return tag
    log.info("%s", plan.describe())
    if plan.method == DEBOOTSTRAP:
        _debootstrap_base(client, plan, tag)
    else:
        error = _registry_error(client, plan.source)
        if error:
            raise EnvironmentProblem(
                f"the base image {plan.source} is not here and cannot be pulled ({error})",
                "make the registry reachable, or unset --base-image / KAFKA_CHAOS_BASE_IMAGE to debootstrap from a "
                f"Debian mirror (--debian-mirror, default {DEFAULT_MIRROR})")
        packages = " ".join(BASE_PACKAGES)
        dockerfile = REGISTRY_DOCKERFILE.format(image=plan.source, packages=packages, java_home=JAVA_HOME)
        with step(f"building {tag} from {plan.source}") as s:
            _build(client, s, tag, fileobj=io.BytesIO(dockerfile.encode()), labels={IMAGE_LABEL: "base"})
    return tag


def _debootstrap_base(client: docker.DockerClient, plan: BasePlan, tag: str) -> None:
    if os.geteuid() != 0:
        raise EnvironmentProblem("debootstrap must run as root to build the base image",
                                 "rerun as root (sudo), or pass --base-image debian:12-slim where a registry answers")
    if not shutil.which("debootstrap"):
        raise EnvironmentProblem("debootstrap is not installed",
                                 "apt-get install -y debootstrap debian-archive-keyring")
    problem = mirror_problem(plan.source, plan.suite)
    if problem:
        raise EnvironmentProblem(
            f"the Debian mirror {plan.source} does not serve {plan.suite} ({problem})",
            f"name a reachable Debian mirror with --debian-mirror URL or {MIRROR_ENV}, "
            "or a registry base image with --base-image debian:12-slim",
        )
    rootfs = Path(tempfile.mkdtemp(prefix="rootfs-", dir=cache_dir()))
    try:
        with step(f"debootstrap {plan.suite} from {plan.source}") as s:
            _run_debootstrap(plan, rootfs, s)
        shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
        with step(f"importing {tag}") as s:
            import_rootfs(client, rootfs, tag, s)
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)


def _run_debootstrap(plan: BasePlan, rootfs: Path, s: Step) -> None:
    cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", plan.suite, str(rootfs),
           plan.source]
    keyring = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
    if keyring.exists():                      # a non-Debian host's debootstrap would otherwise not check Debian's
        cmd.insert(1, f"--keyring={keyring}")
    lines: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        for line in proc.stdout:
            lines = (lines + [line.strip()])[-20:]
            if line.startswith("I: "):
                s.update(line[3:].strip())
    if proc.returncode != 0:
        raise EnvironmentProblem(
            f"debootstrap {plan.suite} failed: {lines[-3:]}",
            f"check that {plan.source} is reachable and the disk has 1 GB free; or pass --base-image debian:12-slim",
        )


def import_rootfs(client: docker.DockerClient, rootfs: Path, tag: str, s: Step | None = None) -> None:
    """A directory tree as an image, through the Docker SDK's import (what `docker import` does), with the base's
    ENV and CMD."""
    with tempfile.NamedTemporaryFile(prefix="rootfs-", suffix=".tar", dir=cache_dir()) as f:
        if s:
            s.update("packing the root filesystem")
        with tarfile.open(fileobj=f, mode="w") as tar:
            tar.add(str(rootfs), arcname=".")
        f.flush()
        if s:
            s.update(f"sending {f.tell() >> 20} MiB to the engine")
        repo, _, version = tag.rpartition(":")
        try:
            out = client.api.import_image(src=f.name, repository=repo, tag=version, changes=BASE_CHANGES)
        except docker.errors.APIError as e:
            raise EnvironmentProblem(f"importing {tag} failed: {e.explanation or e}", "check `docker info`") from e
    if not _image_exists(client, tag):
        raise EnvironmentProblem(f"importing {tag} failed: {str(out)[-300:]}", "check `docker info` and free disk")


def _build(client: docker.DockerClient, s: Step, tag: str, **kwargs) -> None:
    """docker build through the low-level API, so each step shows while it runs; EnvironmentProblem on failure."""
    tail: list[str] = []
    for chunk in client.api.build(tag=tag, rm=True, pull=False, decode=True, **kwargs):
        if "error" in chunk:
            raise EnvironmentProblem(f"building {tag} failed: {' | '.join(tail[-4:] + [chunk['error'].strip()])}",
                                     "rerun with -v")
        text = str(chunk.get("stream") or "").strip()
        if text:
            tail = (tail + [text])[-20:]
            log.debug("build %s: %s", tag, text)
            if text.startswith("Step "):
                s.update(text[:100])


def ensure_broker_image(client: docker.DockerClient, dist: KafkaDistribution,
                        request: BaseRequest | None = None) -> str:
    """The image tag for `dist`, building base and broker layers if their inputs changed."""
    base = ensure_base_image(client, request)
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
        with step(f"building {tag}") as s:
            _build(client, s, tag, path=str(ctx), buildargs={"BASE_IMAGE": base, "LOG4J_OPTS": dist.log4j_opts},
                   labels={IMAGE_LABEL: "broker", "kafka-chaos.kafka-version": dist.version})
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
