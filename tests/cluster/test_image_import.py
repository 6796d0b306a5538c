"""The base image comes in through the Docker SDK's import (no `docker import` CLI): a real import of a tiny root
filesystem into the real engine, with the base's ENV and CMD, then removed."""
import uuid

import pytest

from cluster.image import BASE_CHANGES, JAVA_HOME, import_rootfs

pytestmark = pytest.mark.cluster


def test_a_rootfs_is_imported_through_the_sdk_with_env_and_cmd(tmp_path):
    from cluster.engine import docker_client

    client = docker_client()
    rootfs = tmp_path / "rootfs"
    (rootfs / "etc").mkdir(parents=True)
    (rootfs / "etc/hello").write_text("kafka-chaos\n")
    (rootfs / "link").symlink_to("etc/hello")
    tag = f"kafka-chaos-test-import:{uuid.uuid4().hex[:8]}"
    try:
        import_rootfs(client, rootfs, tag)
        img = client.images.get(tag)
        assert f"JAVA_HOME={JAVA_HOME}" in img.attrs["Config"]["Env"]
        assert img.attrs["Config"]["Cmd"] == ["/bin/bash"] and len(BASE_CHANGES) == 2
        # the files are there: export a container's filesystem (no process is started: the image has no shell)
        container = client.containers.create(tag)
        try:
            data = b"".join(container.export())
        finally:
            container.remove()
        assert b"kafka-chaos\n" in data and b"etc/hello" in data
    finally:
        client.images.remove(tag, force=True)
