"""Kafka releases from Maven Central: the list of versions, and clear errors for ones that cannot run."""
import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.cluster import distribution


def test_versions_come_from_maven_central_and_include_both_supported_lines():
    versions = distribution.available_versions()
    assert "3.9.2" in versions
    assert any(v.startswith("4.") for v in versions)
    assert versions == sorted(versions, key=distribution.parse_version)


def test_default_is_a_4x_release_whose_jars_resolve():
    dist = distribution.resolve()
    assert dist.major == 4 and dist.version == distribution.default_version()
    jars = dist.jar_names()
    assert f"kafka_2.13-{dist.version}.jar" in jars
    assert any(j.startswith("log4j-slf4j-impl") for j in jars)    # the backend the 4.x tarball ships


def test_3_9_gets_reload4j_like_its_tarball():
    jars = distribution.resolve("3.9.2").jar_names()
    assert any(j.startswith("slf4j-reload4j") for j in jars) and any(j.startswith("reload4j") for j in jars)


def test_an_unknown_version_is_refused_naming_versions_that_exist():
    with pytest.raises(UsageError) as e:
        distribution.resolve("4.99.0")
    assert "not on Maven Central" in e.value.cause and "3.9.2" in e.value.remedy


@pytest.mark.parametrize("bad", ["latest", "4.3", "4.3.1-rc1", ""])
def test_a_malformed_version_is_refused(bad):
    with pytest.raises(UsageError):
        distribution.parse_version(bad)


def test_releases_older_than_the_oldest_line_that_runs_are_refused_naming_those_that_do():
    with pytest.raises(UsageError, match="older than") as e:
        distribution.resolve("0.10.2")
    assert "openjdk-17" in e.value.cause and "1.1.1" in e.value.remedy and "2.8.2" in e.value.remedy


@pytest.mark.parametrize("pre_one", ["0.10.2.2", "0.11.0.3", "0.8.2.2"])
def test_a_pre_1_0_release_is_refused_as_too_old_naming_those_that_run(pre_one):
    """Kafka before 1.0 numbered its releases with four numbers: real releases, below the line, not typos."""
    with pytest.raises(UsageError, match="older than") as e:
        distribution.parse_version(pre_one)
    assert pre_one in e.value.cause and "1.1" in e.value.cause and "2.8.2" in e.value.remedy


def test_zookeeper_era_releases_are_listed_and_come_from_the_scala_build_they_have():
    versions = distribution.available_versions()
    assert {"1.1.1", "2.0.1", "2.4.1", "2.8.2", "3.9.2"} <= set(versions)
    assert distribution.artifact("2.0.1") == "kafka_2.12" and distribution.artifact("2.4.1") == "kafka_2.13"


def test_the_default_skips_a_release_central_could_not_serve_and_retries_it_an_hour_later(tmp_path, monkeypatch):
    import os
    import time

    newest = [v for v in distribution.available_versions() if v.startswith("4.")][-1]
    monkeypatch.setattr(distribution, "cache_dir", lambda: tmp_path)
    marker = tmp_path / "kafka" / newest / "UNRESOLVABLE"
    marker.parent.mkdir(parents=True)
    marker.write_text("org.apache.kafka:kafka-tools-api:jar:" + newest + "\n")
    assert distribution.default_version() != newest
    old = time.time() - distribution.UNRESOLVABLE_RETRY_S - 60
    os.utime(marker, (old, old))
    assert distribution.default_version() == newest
