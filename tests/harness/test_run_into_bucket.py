"""`kafka-chaos run SCENARIO --results s3://bucket/prefix` for real: a Kafka cluster in Docker, the run journaled on
local disk, uploaded to the real local S3 server (SeaweedFS) when it ends, its completion marker last; the verdict in
the bucket equal to `check s3://` of the same run; no credential in anything written. And a `kill -9` of the run
while it uploads (its link to the server slowed by a relay in this process, so the kill lands mid-upload) leaves no
run marked complete; `kafka-chaos upload` of the staging root the run named completes it."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kafka_chaos.history import objstore
from tests.conftest import TEST_VERSION
from tests.history.test_objstore import every_object, s3, server  # noqa: F401  (one real server per module)

pytestmark = [pytest.mark.cluster, pytest.mark.objstore, pytest.mark.spark]
CLI = [sys.executable, "-m", "kafka_chaos.harness.cli"]


def run_argv(url: str, seed: int, *extra: str) -> list[str]:
    argv = [*CLI, "run", "leader-kill", "--duration", "15", "--seed", str(seed), "--results", url, *extra]
    return argv + (["--kafka-version", TEST_VERSION] if TEST_VERSION else [])


def test_a_real_run_into_a_bucket_is_uploaded_complete_and_checks_the_same_from_there(s3, server):  # noqa: F811
    done = subprocess.run(run_argv(s3.url, 31), capture_output=True, text=True, timeout=900)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    (name,) = objstore.list_names(s3)
    assert f"uploaded: {s3.url}/{name} (complete)" in done.stdout
    marker = objstore.marker(s3, name)
    assert {"meta.json", "verdict.json", "history/sends.parquet", "anomalies.parquet"} <= set(marker["files"])
    stage = re.search(r"journal staged in (\S+);", done.stderr).group(1)
    assert not Path(stage).exists()                                   # uploaded: the staging root removed
    at_run = json.loads(objstore.read_bytes(s3, name, "verdict.json"))
    assert (at_run["valid"] is True) == (done.returncode == 0)
    again = subprocess.run([*CLI, "check", s3.url, "--force"], capture_output=True, text=True, timeout=600)
    assert again.returncode == done.returncode, again.stdout + again.stderr
    rechecked = json.loads(objstore.read_bytes(s3, name, "verdict.json"))
    assert rechecked["checker"].get("history_read") == "s3a"
    ignore = ("checker", "timings")
    assert {k: v for k, v in rechecked.items() if k not in ignore} == {k: v for k, v in at_run.items()
                                                                       if k not in ignore}
    leaks = [k for k, data in every_object(s3).items()
             if server.secret_key.encode() in data or server.access_key.encode() in data]
    assert leaks == [] and server.secret_key not in done.stdout + done.stderr


def owned_containers(pid: int, timeout: float = 60) -> list:
    import docker
    from kafka_chaos.cluster.kafka_cluster import LABEL_OWNER

    client, deadline = docker.from_env(), time.monotonic() + timeout
    mine = {"label": f"{LABEL_OWNER}={pid}"}
    while (found := client.containers.list(all=True, ignore_removed=True, filters=mine)) and \
            time.monotonic() < deadline:
        time.sleep(1)
    return found


class SlowRelay:
    """127.0.0.1:port -> the server, the client's bytes at `rate` bytes/s: a slow uplink, nothing else changed."""

    def __init__(self, upstream: str, rate: int):
        host, port = upstream.removeprefix("http://").split(":")
        self.upstream, self.rate = (host, int(port)), rate
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            up = socket.create_connection(self.upstream)
            threading.Thread(target=self._pump, args=(client, up, self.rate), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, client, None), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, rate: int | None) -> None:
        try:
            while data := src.recv(16 << 10):
                dst.sendall(data)
                if rate:
                    time.sleep(len(data) / rate)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.stopped = True
        self.sock.close()


def test_a_kill_9_of_a_real_run_while_it_uploads_leaves_no_run_marked_complete(s3, server, tmp_path):  # noqa: F811
    relay = SlowRelay(server.endpoint, rate=1 << 20)              # 1 MiB/s: a 15 s run's upload takes seconds
    log = tmp_path / "run.err"
    try:
        with log.open("w") as err:
            proc = subprocess.Popen(run_argv(s3.url, 32, "--no-check"), stdout=subprocess.DEVNULL, stderr=err,
                                    env={**os.environ, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{relay.port}"})
            deadline = time.monotonic() + 600
            while proc.poll() is None and time.monotonic() < deadline and not objstore.list_names(s3):
                time.sleep(0.05)
            assert proc.poll() is None, log.read_text()[-3000:]       # the upload has begun, the run still going
            time.sleep(0.5)
            proc.kill()
            proc.wait()
    finally:
        relay.close()
    assert owned_containers(proc.pid) == []                           # the cluster went before the upload began
    (name,) = objstore.list_names(s3)
    assert objstore.marker(s3, name) is None                          # partly there, not complete
    with pytest.raises(objstore.UsageError, match="no complete run"):
        objstore.stage(s3.url, tmp_path / "stage")
    stage = Path(re.search(r"journal staged in (\S+);", log.read_text()).group(1))
    try:
        assert (stage / name / "meta.json").exists()                  # the run, still on local disk
        done = subprocess.run([*CLI, "upload", str(stage), s3.url, "--replace"], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        assert objstore.marker(s3, name) is not None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
