"""Kafka's broker runtime classpath, resolved from Maven Central with Maven into a versioned cache.

The published kafka_2.13 POM (kafka_2.12 before 2.4, which had no Scala 2.13 build) gives core's runtime classpath;
the logging backend the release tarball ships is added by a profile of docker/pom.xml (up to 3.x: reload4j, 4.x:
log4j2). No tarball, no bin scripts: the image runs kafka.Kafka (and ZooKeeper's QuorumPeerMain, whose jars 2.x and
3.x brokers depend on).
"""
from __future__ import annotations

import logging
import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kafka_chaos.base.errors import EnvironmentProblem, UsageError
from kafka_chaos.base.paths import DOCKER_CONTEXT, cache_dir
from kafka_chaos.base.progress import Step, step
from kafka_chaos.base.versions import version_tuple
from kafka_chaos.cluster import zk_client_fix

log = logging.getLogger(__name__)

GROUP, ARTIFACT = "org.apache.kafka", "kafka_2.13"
SCALA_213_FROM = (2, 4, 0)      # the first release with a kafka_2.13 build; older ones run from kafka_2.12
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
METADATA_MAX_AGE_S = 24 * 3600
# A release Central listed but could not serve whole (4.4.0 lacked kafka-tools-api for a while, then got it) is
# skipped by the default only this long; then resolving it is tried again.
UNRESOLVABLE_RETRY_S = 3600
# The oldest release line Debian 12's JRE (openjdk-17) runs here, in ZooKeeper mode: see README "Older releases".
OLDEST_SUPPORTED = (1, 1, 0)


def artifact(version: str) -> str:
    """kafka_2.13 where the release has a Scala 2.13 build (2.4+), else kafka_2.12."""
    return ARTIFACT if parse_version(version) >= SCALA_213_FROM else "kafka_2.12"


@dataclass(frozen=True)
class KafkaDistribution:
    """A resolved broker classpath: `libs` holds every jar `kafka.Kafka` needs."""

    version: str
    libs: Path

    @property
    def major(self) -> int:
        return parse_version(self.version)[0]

    @property
    def log4j_opts(self) -> str:
        if self.major >= 4:
            return "-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.xml"
        return "-Dlog4j.configuration=file:/opt/kafka/config/log4j.properties"

    def jar_names(self) -> list[str]:
        return sorted(p.name for p in self.libs.glob("*.jar"))


def parse_version(version: str) -> tuple[int, ...]:
    """A release version (three numbers, no suffix); UsageError for anything else. A pre-1.0 release (four
    numbers, 0.11.0.3) is a real Kafka this harness does not run: refused as too old, naming the ones that do."""
    if re.fullmatch(r"0\.\d+\.\d+\.\d+", version or ""):
        raise UsageError(f"Kafka {version} is older than this harness runs: {_OLDEST_LINE}", _runnable_remedy())
    if not re.fullmatch(r"\d+\.\d+\.\d+", version or ""):
        raise UsageError(f"'{version}' is not a Kafka release version", "give one like 4.4.0 or 3.9.2")
    return version_tuple(version)


_OLDEST_LINE = ("the oldest line Debian 12's openjdk-17 runs here is 1.1 (ZooKeeper mode; see the README's "
                "'Older releases')")


def _runnable_remedy() -> str:
    """'pick one of: ...' from Maven Central's list; a fixed hint when that list cannot be had (no mvn, offline)."""
    try:
        return f"pick one of: {', '.join(available_versions())}"
    except (EnvironmentProblem, UsageError):
        return "pick a release from 1.1.0 on, e.g. 1.1.1, 2.8.2, 3.9.2 or 4.4.0"


def _mvn() -> str:
    mvn = shutil.which("mvn")
    if not mvn:
        raise EnvironmentProblem(
            "Maven (mvn) is not on PATH: it resolves Kafka's jars from Maven Central",
            "apt-get install -y maven (and a JDK 17: apt-get install -y openjdk-17-jdk-headless)",
        )
    return mvn


def _run_mvn(args: list[str], cwd: Path, on_line: Callable[[str], None] | None = None) -> subprocess.CompletedProcess:
    """Maven in batch mode; `on_line` sees each line of its output as it comes (a progress display, which then
    also gets Maven's download lines)."""
    cmd = [_mvn(), "-B", *(["-ntp"] if on_line is None else []), *args]
    log.debug("running %s", " ".join(cmd))
    if on_line is None:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    lines = []
    with subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        for line in proc.stdout:
            lines.append(line)
            on_line(line.rstrip())
    return subprocess.CompletedProcess(cmd, proc.returncode, "".join(lines), "")


def _mvn_progress(s: Step) -> Callable[[str], None]:
    """Shows the artifact Maven is copying or downloading now."""
    def on_line(line: str) -> None:
        m = re.search(r"(?:Downloading from \S+:|Downloaded from \S+:) (\S+)", line)
        if m:
            s.update(m.group(1).rsplit("/", 1)[-1])
        elif m := re.search(r"\[INFO\] --- (\S+)", line):
            s.update(m.group(1))
    return on_line


def _metadata_file(name: str = ARTIFACT) -> Path:
    return Path.home() / ".m2/repository/org/apache/kafka" / name / "maven-metadata-central.xml"


def available_versions(refresh: bool = False) -> list[str]:
    """Release versions Maven Central lists from OLDEST_SUPPORTED on (kafka_2.12 before 2.4, kafka_2.13 after),
    oldest first."""
    old = [v for v in _listed("kafka_2.12", refresh) if parse_version(v) < SCALA_213_FROM]
    new = [v for v in _listed(ARTIFACT, refresh) if parse_version(v) >= SCALA_213_FROM]
    return sorted((v for v in old + new if parse_version(v) >= OLDEST_SUPPORTED), key=parse_version)


def _listed(name: str, refresh: bool) -> list[str]:
    """Every release version of org.apache.kafka:`name` Central lists (its maven-metadata.xml, fetched daily)."""
    meta = _metadata_file(name)
    stale = not meta.exists() or time.time() - meta.stat().st_mtime > METADATA_MAX_AGE_S
    if refresh or stale:
        probe = cache_dir() / "probe" / name
        probe.mkdir(parents=True, exist_ok=True)
        # A version range makes Maven fetch the artifact's maven-metadata.xml, which lists every release.
        (probe / "pom.xml").write_text(
            '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            "<groupId>local.kafka-chaos</groupId><artifactId>probe</artifactId><version>1</version>"
            "<packaging>pom</packaging><dependencies><dependency>"
            f"<groupId>{GROUP}</groupId><artifactId>{name}</artifactId>"
            "<version>[99999.0.0,)</version><type>pom</type></dependency></dependencies></project>"
        )
        proc = _run_mvn(["-U", "-q", f"{DEPENDENCY_PLUGIN}:list", "-DexcludeTransitive=true"], probe)
        if not meta.exists():
            raise EnvironmentProblem(
                f"could not read the version list of {GROUP}:{name} from Maven Central "
                f"(mvn said: {_last_lines(proc)})",
                "check network access to Maven Central (and any mirror in ~/.m2/settings.xml)",
            )
        meta.touch()
    versions = [v.text for v in ET.parse(meta).getroot().iter("version") if v.text]
    return [v for v in versions if re.fullmatch(r"\d+\.\d+\.\d+", v)]


def default_version() -> str:
    """The newest 4.x release Maven Central lists and can serve whole (some releases lack an artifact)."""
    fours = [v for v in available_versions() if parse_version(v)[0] == 4]
    usable = [v for v in fours if not _known_unresolvable(v)]
    if not usable:
        raise EnvironmentProblem("Maven Central lists no usable Kafka 4.x release", "pass --kafka-version explicitly")
    return usable[-1]


def _unresolvable_marker(version: str) -> Path:
    return cache_dir() / "kafka" / version / "UNRESOLVABLE"


def _known_unresolvable(version: str) -> bool:
    marker = _unresolvable_marker(version)
    return marker.exists() and time.time() - marker.stat().st_mtime < UNRESOLVABLE_RETRY_S


def _last_lines(proc: subprocess.CompletedProcess, n: int = 6) -> str:
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "ERROR" in ln] or (
        proc.stdout + proc.stderr
    ).splitlines()
    return " | ".join(ln.strip() for ln in lines[-n:])


def libs_dir(version: str) -> Path:
    return cache_dir() / "kafka" / version / "libs"


def cached(version: str) -> KafkaDistribution | None:
    libs = libs_dir(version)
    if (libs.parent / "COMPLETE").exists():
        if zk_client_fix.affected_jar(libs):      # resolved before the ZooKeeper 3.4.13/14 client was mended
            _mend_zookeeper_client(KafkaDistribution(version, libs))
        return KafkaDistribution(version, libs)
    return None


def _zookeeper_sources(zk_version: str) -> Path:
    """ZooKeeper's -sources.jar of `zk_version` from Maven Central (the local Maven repository once fetched)."""
    coordinate = f"org.apache.zookeeper:zookeeper:{zk_version}:jar:sources"
    jar = Path.home() / f".m2/repository/org/apache/zookeeper/zookeeper/{zk_version}/zookeeper-{zk_version}-sources.jar"
    if not jar.exists():
        proc = _run_mvn([f"{DEPENDENCY_PLUGIN}:get", f"-Dartifact={coordinate}", "-Dtransitive=false"], cache_dir())
        if not jar.exists():
            raise EnvironmentProblem(f"could not fetch ZooKeeper {zk_version}'s sources from Maven Central "
                                     f"(mvn said: {_last_lines(proc)})", "check network access to Maven Central")
    return jar


def _mend_zookeeper_client(dist: KafkaDistribution) -> None:
    """Kafka 2.0-2.3's ZooKeeper 3.4.13/3.4.14 client, mended to connect on Java 14+ (cluster/zk_client_fix.py)."""
    with step(f"mending Kafka {dist.version}'s ZooKeeper client for Java 17 (StaticHostProvider)"):
        zk_client_fix.mend(dist.libs, _zookeeper_sources)
    (dist.libs.parent / "COMPLETE").write_text("\n".join(dist.jar_names()) + "\n")


def resolve(version: str | None = None) -> KafkaDistribution:
    """The broker classpath for `version`, downloading it once.

    Without a version: the newest 4.x release, skipping releases whose artifacts Maven Central cannot serve.
    """
    if version is not None:
        return _resolve_exact(version)
    while True:
        candidate = default_version()
        try:
            return _resolve_exact(candidate)
        except UnresolvableRelease as e:
            log.warning("skipping Kafka %s: %s", candidate, e.cause)


class UnresolvableRelease(UsageError):
    """A release Maven Central lists whose dependency closure it cannot serve."""


def _resolve_exact(version: str) -> KafkaDistribution:
    parse_version(version)
    if found := cached(version):
        return found
    if parse_version(version) < OLDEST_SUPPORTED:
        raise UsageError(f"Kafka {version} is older than this harness runs: {_OLDEST_LINE}", _runnable_remedy())
    libs = libs_dir(version)
    tmp = libs.parent / "libs.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    profile = "kafka4" if parse_version(version)[0] >= 4 else "kafka3"
    with step(f"resolving Kafka {version}'s broker jars from Maven Central (profile {profile})") as s:
        proc = _run_mvn(
            [
                "-U", "-f", str(DOCKER_CONTEXT / "pom.xml"), "-P", profile, f"-Dkafka.version={version}",
                f"-Dscala.binary={artifact(version).split('_')[1]}",
                f"{DEPENDENCY_PLUGIN}:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={tmp}",
            ],
            cwd=libs.parent, on_line=_mvn_progress(s),
        )
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        out = proc.stdout + proc.stderr
        known = available_versions(refresh=True)
        if version not in known:
            raise UsageError(
                f"Kafka {version} is not on Maven Central ({GROUP}:{artifact(version)}:{version} does not exist)",
                f"pick one of: {', '.join(known)}",
            )
        missing = re.search(r"Could not find artifact (\S+)", out) or re.search(r"(\S+:jar:\S+) was not found", out)
        if missing:
            _unresolvable_marker(version).write_text(missing.group(1) + "\n")
            others = [v for v in known if v != version and not _known_unresolvable(v)]
            raise UnresolvableRelease(
                f"Kafka {version} is listed on Maven Central but its dependency {missing.group(1)} is missing there",
                f"pick another release: {', '.join(others)}",
            )
        raise EnvironmentProblem(
            f"Maven could not resolve {GROUP}:{artifact(version)}:{version} and its dependencies: {_last_lines(proc)}",
            "check network access to Maven Central; rerun with -v for Maven's full output",
        )
    shutil.rmtree(libs, ignore_errors=True)
    tmp.rename(libs)
    dist = KafkaDistribution(version, libs)
    if zk_client_fix.affected_jar(libs):
        _mend_zookeeper_client(dist)
    (libs.parent / "COMPLETE").write_text("\n".join(dist.jar_names()) + "\n")
    log.info("Kafka %s: %d jars in %s", version, len(dist.jar_names()), libs)
    return dist
