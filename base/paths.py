"""Where kafka-chaos keeps its files: the image's Docker build context and the per-user cache."""
from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from kafka_chaos.base.errors import EnvironmentProblem


def _docker_context() -> Path:
    """The build context (Dockerfile, pom.xml, launch script): package data kafka_chaos/docker in an installed
    wheel; the repository's docker/ in a checkout (an editable install maps the packages, not data folders)."""
    installed = Path(str(resources.files("kafka_chaos") / "docker"))
    checkout = Path(str(resources.files("kafka_chaos.base"))).parent / "docker"
    for place in (installed, checkout):
        if (place / "Dockerfile").is_file():
            return place
    raise EnvironmentProblem(f"the image build context (Dockerfile, pom.xml) is in neither {installed} nor {checkout}",
                             "reinstall kafka-chaos (pip install --force-reinstall kafka-chaos), or run from a full "
                             "checkout")


DOCKER_CONTEXT = _docker_context()


def cache_dir() -> Path:
    """Jars, the base rootfs and build contexts; KAFKA_CHAOS_CACHE overrides ~/.cache/kafka-chaos."""
    root = os.environ.get("KAFKA_CHAOS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kafka-chaos"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path
