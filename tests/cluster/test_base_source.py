"""The base image's source on any host: a Debian host's own mirror; on Ubuntu (GitHub's runners, whose apt sources
are `mirror+file:`) a registry base where the registry answers, else debootstrap from a Debian mirror named
explicitly. The choice is a pure function of the host's files; the last tests take this machine's real engine and
the real Debian mirror for a host that looks like a GitHub runner."""
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_chaos.base.errors import EnvironmentProblem, UsageError
from kafka_chaos.cluster.base_source import (
    DEBOOTSTRAP,
    DEFAULT_BASE_IMAGE,
    DEFAULT_MIRROR,
    REGISTRY,
    BasePlan,
    BaseRequest,
    HostApt,
    choose_base,
    mirror_problem,
    read_host_apt,
)

UBUNTU_OS_RELEASE = """PRETTY_NAME="Ubuntu 24.04.1 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=noble
"""
# /etc/apt/sources.list.d/ubuntu.sources on a GitHub ubuntu-24.04 runner (deb822)
UBUNTU_DEB822 = """Types: deb
URIs: mirror+file:/etc/apt/apt-mirrors.txt
Suites: noble noble-updates noble-backports
Components: main universe restricted multiverse
Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg

Types: deb
URIs: http://security.ubuntu.com/ubuntu
Suites: noble-security
Components: main universe restricted multiverse
Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg
"""
# /etc/apt/sources.list on a GitHub ubuntu-22.04 runner (one-line form)
UBUNTU_ONE_LINE = """deb mirror+file:/etc/apt/apt-mirrors.txt jammy main restricted
# deb-src http://archive.ubuntu.com/ubuntu/ jammy main restricted
deb mirror+file:/etc/apt/apt-mirrors.txt jammy-updates main restricted
deb http://security.ubuntu.com/ubuntu jammy-security main restricted
"""
DEBIAN_OS_RELEASE = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_CODENAME=bookworm\n'
DEBIAN_DEB822 = """Types: deb
URIs: http://ftp.de.debian.org/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
"""


def host_root(tmp_path: Path, os_release: str, files: dict[str, str]) -> Path:
    (tmp_path / "etc/apt/sources.list.d").mkdir(parents=True)
    (tmp_path / "etc/os-release").write_text(os_release)
    for name, text in files.items():
        (tmp_path / "etc/apt" / name).write_text(text)
    return tmp_path


def no_registry(image: str) -> str:
    return "dial tcp: lookup registry-1.docker.io: no such host"


def registry_answers(image: str) -> None:
    return None


def must_not_ask(image: str):
    raise AssertionError("the registry was asked although the choice did not depend on it")


@pytest.mark.parametrize("files", [{"sources.list.d/ubuntu.sources": UBUNTU_DEB822},
                                   {"sources.list": UBUNTU_ONE_LINE}], ids=["deb822", "one-line"])
def test_ubuntu_runner_sources_are_read_as_not_debian(tmp_path, files):
    host = read_host_apt(host_root(tmp_path, UBUNTU_OS_RELEASE, files))
    assert host.os_id == "ubuntu"
    assert host.uris[0] == "mirror+file:/etc/apt/apt-mirrors.txt"
    assert "http://security.ubuntu.com/ubuntu" in host.uris
    assert not any("archive.ubuntu.com" in u for u in host.uris)          # the commented deb-src line


@pytest.mark.parametrize("files", [{"sources.list.d/ubuntu.sources": UBUNTU_DEB822},
                                   {"sources.list": UBUNTU_ONE_LINE}], ids=["deb822", "one-line"])
def test_ubuntu_host_without_registry_debootstraps_bookworm_from_the_debian_mirror(tmp_path, files):
    plan = choose_base(read_host_apt(host_root(tmp_path, UBUNTU_OS_RELEASE, files)), BaseRequest(), no_registry)
    assert (plan.method, plan.suite, plan.source) == (DEBOOTSTRAP, "bookworm", DEFAULT_MIRROR)
    assert "ubuntu, not Debian" in plan.reason and "no such host" in plan.reason
    assert plan.describe().startswith(f"base image: debootstrap bookworm from {DEFAULT_MIRROR}, because")


@pytest.mark.parametrize("files", [{"sources.list.d/ubuntu.sources": UBUNTU_DEB822},
                                   {"sources.list": UBUNTU_ONE_LINE}], ids=["deb822", "one-line"])
def test_ubuntu_host_with_a_registry_takes_the_registry_image(tmp_path, files):
    plan = choose_base(read_host_apt(host_root(tmp_path, UBUNTU_OS_RELEASE, files)), BaseRequest(),
                       registry_answers)
    assert (plan.method, plan.source) == (REGISTRY, DEFAULT_BASE_IMAGE)
    assert "registry answers" in plan.reason


def test_debian_host_uses_its_own_mirror_and_never_asks_the_registry(tmp_path):
    root = host_root(tmp_path, DEBIAN_OS_RELEASE, {"sources.list.d/debian.sources": DEBIAN_DEB822})
    plan = choose_base(read_host_apt(root), BaseRequest(), must_not_ask)
    assert plan == BasePlan(DEBOOTSTRAP, "bookworm", "http://ftp.de.debian.org/debian",
                            "this Debian host's apt sources name http://ftp.de.debian.org/debian")


def test_a_newer_debian_host_still_gets_bookworm_from_its_mirror(tmp_path):
    """trixie has no openjdk-17: the base stays Debian 12 whatever the host runs; the host's mirror serves it."""
    os_release = DEBIAN_OS_RELEASE.replace("bookworm", "trixie")
    sources = DEBIAN_DEB822.replace("bookworm", "trixie")
    root = host_root(tmp_path, os_release, {"sources.list.d/debian.sources": sources})
    plan = choose_base(read_host_apt(root), BaseRequest(), must_not_ask)
    assert (plan.method, plan.suite, plan.source) == (DEBOOTSTRAP, "bookworm", "http://ftp.de.debian.org/debian")


def test_debian_host_with_mirror_file_sources_falls_back_like_any_other_host(tmp_path):
    one_line = "deb mirror+file:/etc/apt/mirrors.txt bookworm main\ndeb http://deb.debian.org/debian-security x main\n"
    plan = choose_base(read_host_apt(host_root(tmp_path, DEBIAN_OS_RELEASE, {"sources.list": one_line})),
                       BaseRequest(), no_registry)
    assert (plan.method, plan.source) == (DEBOOTSTRAP, DEFAULT_MIRROR)
    assert "mirror+file:/etc/apt/mirrors.txt" in plan.reason


def test_disabled_deb822_stanzas_and_source_types_are_ignored(tmp_path):
    text = ("Types: deb-src\nURIs: http://a.example/debian\n\nTypes: deb\nURIs: http://b.example/debian\nEnabled: no"
            "\n\nTypes: deb\nURIs: http://c.example/debian http://d.example/debian\n")
    host = read_host_apt(host_root(tmp_path, DEBIAN_OS_RELEASE, {"sources.list.d/x.sources": text}))
    assert host.uris == ("http://c.example/debian", "http://d.example/debian")


def test_a_host_without_os_release_or_sources(tmp_path):
    host = read_host_apt(tmp_path)
    assert host == HostApt("", "", ())
    plan = choose_base(host, BaseRequest(), no_registry)
    assert (plan.method, plan.source) == (DEBOOTSTRAP, DEFAULT_MIRROR)
    assert "not identified by /etc/os-release" in plan.reason


def test_explicit_choices_win_without_asking_the_registry(tmp_path):
    ubuntu = read_host_apt(host_root(tmp_path, UBUNTU_OS_RELEASE, {"sources.list": UBUNTU_ONE_LINE}))
    plan = choose_base(ubuntu, BaseRequest(base_image="debian:12"), must_not_ask)
    assert (plan.method, plan.source) == (REGISTRY, "debian:12")
    plan = choose_base(ubuntu, BaseRequest(mirror="https://mirror.example/debian/"), must_not_ask)
    assert (plan.method, plan.suite, plan.source) == (DEBOOTSTRAP, "bookworm", "https://mirror.example/debian")


def test_options_beat_environment_variables(monkeypatch):
    monkeypatch.setenv("KAFKA_CHAOS_DEBIAN_MIRROR", "http://env.example/debian")
    monkeypatch.setenv("KAFKA_CHAOS_BASE_IMAGE", "")
    assert BaseRequest.from_env() == BaseRequest(None, "http://env.example/debian")
    assert BaseRequest.from_env(mirror="http://opt.example/debian").mirror == "http://opt.example/debian"


def test_a_mirror_that_is_not_a_url_is_a_usage_error():
    with pytest.raises(UsageError) as e:
        choose_base(HostApt("ubuntu", "noble"), BaseRequest(mirror="mirror+file:/etc/apt/apt-mirrors.txt"),
                    must_not_ask)
    assert e.value.exit_code == 2 and "--debian-mirror" in e.value.remedy


# ---- the same path on this machine: its real engine, the real Debian mirror -------------------------------------

@pytest.mark.cluster
def test_a_github_like_host_here_plans_debootstrap_from_a_mirror_that_serves_bookworm(tmp_path):
    """Here no registry answers: a host that looks like a GitHub runner gets debootstrap from deb.debian.org,
    and that mirror really serves bookworm (debootstrap's first request)."""
    from kafka_chaos.cluster.engine import docker_client
    from kafka_chaos.cluster.image import base_tag, plan_base

    root = host_root(tmp_path, UBUNTU_OS_RELEASE, {"sources.list.d/ubuntu.sources": UBUNTU_DEB822})
    client = docker_client()
    plan = plan_base(client, BaseRequest(), root=root)
    if plan.method == REGISTRY:                  # a machine where Docker Hub answers: the other branch
        assert plan.source == DEFAULT_BASE_IMAGE and "registry answers" in plan.reason
        return
    assert (plan.suite, plan.source) == ("bookworm", DEFAULT_MIRROR), plan
    assert mirror_problem(plan.source, plan.suite) is None
    assert base_tag(plan).startswith("kafka-chaos-base:bookworm-")


def test_a_mirror_that_does_not_serve_the_suite_is_named_with_its_cause():
    problem = mirror_problem(DEFAULT_MIRROR, "no-such-suite")
    assert problem and "dists/no-such-suite/Release" in problem and "404" in problem
    assert "does not exist" in mirror_problem("file:/nonexistent/debian", "bookworm")


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="debootstrap's preconditions are checked as root")
def test_an_unreachable_mirror_fails_before_debootstrap_with_cause_and_remedy(tmp_path):
    from kafka_chaos.cluster.engine import docker_client
    from kafka_chaos.cluster.image import _debootstrap_base

    plan = BasePlan(DEBOOTSTRAP, "bookworm", "http://127.0.0.1:9/debian", "test")
    with pytest.raises(EnvironmentProblem) as e:
        _debootstrap_base(docker_client(), plan, "kafka-chaos-base:never-built")
    assert "does not serve bookworm" in e.value.cause and "--base-image debian:12-slim" in e.value.remedy


def test_the_cli_refuses_a_bad_mirror_with_exit_2():
    out = subprocess.run([sys.executable, "-m", "kafka_chaos.harness.cli", "setup", "--debian-mirror", "ftp://x/debian"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "is not an http(s):// or file:/ URL" in out.stderr and "remedy:" in out.stderr
