"""The base image comes in through the Docker SDK's import (no `docker import` CLI): a real import of a tiny root
filesystem into the real engine, with the base's ENV and CMD, then removed."""
import uuid

import pytest

from kafka_chaos.cluster.image import BASE_CHANGES, JAVA_HOME, import_rootfs

pytestmark = pytest.mark.cluster


def test_a_rootfs_is_imported_through_the_sdk_with_env_and_cmd(tmp_path):
    from kafka_chaos.cluster.engine import docker_client

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


def test_a_registry_base_is_built_from_the_image_with_the_packages():
    """The registry path (GitHub's runners) for real: here no registry answers, so the local debootstrapped base
    stands in for debian:12-slim; the build runs apt-get against the Debian mirror like on a runner."""
    from kafka_chaos.cluster.base_source import BaseRequest
    from kafka_chaos.cluster.engine import docker_client
    from kafka_chaos.cluster.image import BASE_REPO, ensure_base_image

    client = docker_client()
    local = next((t for img in client.images.list(name=BASE_REPO) for t in img.tags
                  if img.labels.get("kafka-chaos.image") != "base"), None)
    if local is None:
        pytest.skip("no debootstrapped base image here to stand in for a registry image (run kafka-chaos setup)")
    tag = ensure_base_image(client, BaseRequest(base_image=local))
    try:
        assert tag.startswith(f"{BASE_REPO}:bookworm-") and tag != local
        img = client.images.get(tag)
        assert img.labels["kafka-chaos.image"] == "base" and f"JAVA_HOME={JAVA_HOME}" in img.attrs["Config"]["Env"]
        script = "java -version 2>&1 | head -1; for c in iptables ip ps; do command -v $c; done"
        out = client.containers.run(tag, ["sh", "-c", script], remove=True).decode()
        assert "openjdk version \"17" in out and "/iptables" in out and "/ps" in out
    finally:
        client.images.remove(tag, force=True)


def test_a_base_image_that_cannot_be_pulled_is_named_with_cause_and_remedy():
    from kafka_chaos.base.errors import EnvironmentProblem
    from kafka_chaos.cluster.base_source import BaseRequest
    from kafka_chaos.cluster.engine import docker_client
    from kafka_chaos.cluster.image import ensure_base_image

    with pytest.raises(EnvironmentProblem) as e:
        ensure_base_image(docker_client(), BaseRequest(base_image="kafka-chaos-no-such/image:0"))
    assert e.value.exit_code == 2
    assert "kafka-chaos-no-such/image:0 is not here and cannot be pulled" in e.value.cause
    assert "--debian-mirror" in e.value.remedy
