"""The Docker engine the harness talks to: whatever DOCKER_HOST / the default socket points at."""
from __future__ import annotations

import docker.errors

import docker
from kafka_chaos.base.errors import EnvironmentProblem


def docker_client() -> docker.DockerClient:
    """A client that has answered a ping, or a clear error saying how to get an engine."""
    try:
        client = docker.from_env(timeout=120)
        client.ping()
        return client
    except (docker.errors.DockerException, OSError) as e:
        raise EnvironmentProblem(
            f"no Docker engine answers ({e})",
            "start one: `bash scripts/setup.sh` installs Debian's docker.io and starts dockerd if needed; "
            "or start your own engine (systemctl start docker) and check `docker info`",
        ) from e
