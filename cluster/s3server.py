"""A real S3-compatible server for the tests: SeaweedFS's `weed`, built from its Go module through the module proxy
(scripts/seaweedfs.sh, into the kafka-chaos cache), started on loopback only, labelled and removed like the cluster.

`start()` launches a sitter (`python -m kafka_chaos.cluster.s3server`) holding a pipe from the caller: the sitter
starts `weed` in a session of its own, with the label in its environment and its data in a labelled directory, and
when the pipe closes (the caller stopped it, exited, or was killed with -9) it kills weed's process group and removes
the directory. Nothing of it outlives the process that started it. The server's identity (an access key and secret
for its own config) is the caller's to hand to clients through the standard AWS variables; nothing is stored.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from kafka_chaos.base.errors import EnvironmentProblem

VERSION = "v0.0.0-20261109003541-7506e5f91cd6"     # keep in step with scripts/seaweedfs.sh
LABEL_ENV = "KAFKA_CHAOS_S3_LABEL"


def cache_dir() -> Path:
    base = os.environ.get("KAFKA_CHAOS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kafka-chaos")
    return Path(base) / "seaweedfs" / VERSION


def binary() -> Path:
    path = cache_dir() / "weed"
    if not os.access(path, os.X_OK):
        raise EnvironmentProblem(f"SeaweedFS's weed is not built ({path} is missing)",
                                 "bash scripts/seaweedfs.sh --install (scripts/setup.sh --test runs it)")
    return path


@dataclass
class S3Server:
    endpoint: str
    access_key: str
    secret_key: str
    label: str
    workdir: Path
    _sitter: subprocess.Popen | None = field(default=None, repr=False)

    def env(self) -> dict[str, str]:
        """The standard AWS variables a client of this server needs."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": self.access_key,
                "AWS_SECRET_ACCESS_KEY": self.secret_key, "AWS_REGION": "us-east-1"}

    def stop(self, timeout_s: float = 30) -> None:
        if self._sitter is not None and self._sitter.poll() is None:
            self._sitter.stdin.close()
            try:
                self._sitter.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self._sitter.kill()
                self._sitter.wait(timeout=5)
        self._sitter = None

    def __enter__(self) -> "S3Server":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _free_port() -> int:
    """A loopback port p with p + 10000 free too (weed's gRPC ports are its HTTP ports + 10000)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 10000 < 65536:
            try:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port + 10000))
                return port
            except OSError:
                continue
    raise EnvironmentProblem("no free loopback port pair for SeaweedFS", "free some ports and retry")


def weed_args(workdir: Path, ports: dict[str, int], config: Path) -> list[str]:
    return [str(binary()), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={workdir / 'data'}",
            f"-master.port={ports['master']}", f"-volume.port={ports['volume']}", "-master.volumeSizeLimitMB=64",
            "-volume.max=64", "-filer", f"-filer.port={ports['filer']}", "-s3", f"-s3.port={ports['s3']}",
            f"-s3.config={config}", f"-s3.port.iceberg={ports['iceberg']}", f"-s3.port.lance={ports['lance']}",
            "-master.dir=" + str(workdir / "master")]


def start(label: str, access_key: str, secret_key: str, buckets: tuple[str, ...] = (),
          timeout_s: float = 120) -> S3Server:
    """A SeaweedFS master, volume, filer and S3 gateway on 127.0.0.1, answering when this returns."""
    workdir = Path(tempfile.mkdtemp(prefix=f"kafka-chaos-s3-{label}-"))
    (workdir / "data").mkdir()
    (workdir / "master").mkdir()
    config = workdir / "s3.json"
    config.write_text(json.dumps({"identities": [{"name": "kafka-chaos", "credentials": [
        {"accessKey": access_key, "secretKey": secret_key}], "actions": ["Admin", "Read", "Write", "List",
                                                                         "Tagging"]}]}))
    config.chmod(0o600)
    ports = {name: _free_port() for name in ("master", "volume", "filer", "s3", "iceberg", "lance")}
    sitter = subprocess.Popen([sys.executable, "-m", "kafka_chaos.cluster.s3server", label, str(workdir), "--",
                               *weed_args(workdir, ports, config)],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    server = S3Server(f"http://127.0.0.1:{ports['s3']}", access_key, secret_key, label, workdir, sitter)
    try:
        _wait_ready(server, timeout_s)
        for bucket in buckets:
            _make_bucket(server, bucket, timeout_s)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: S3Server, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server._sitter.poll() is not None:
            raise EnvironmentProblem(f"SeaweedFS exited at start (see {server.workdir}/weed.log)",
                                     "bash scripts/seaweedfs.sh --install, then retry")
        try:
            urllib.request.urlopen(server.endpoint + "/", timeout=2)
            return
        except urllib.error.HTTPError:       # 403 without credentials: the gateway answers
            return
        except OSError:
            time.sleep(0.5)
    raise EnvironmentProblem(f"SeaweedFS's S3 gateway did not answer on {server.endpoint} in {timeout_s:.0f} s",
                             f"see {server.workdir}/weed.log")


def _make_bucket(server: S3Server, bucket: str, timeout_s: float) -> None:
    """create_dir on the bucket through pyarrow (the first volumes may take a moment to be allocated)."""
    from pyarrow import fs

    s3 = fs.S3FileSystem(access_key=server.access_key, secret_key=server.secret_key, region="us-east-1",
                         allow_bucket_creation=True,
                         endpoint_override=server.endpoint.removeprefix("http://"), scheme="http")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            s3.create_dir(bucket)
            with s3.open_output_stream(f"{bucket}/.ready") as f:
                f.write(b"ok")
            s3.delete_file(f"{bucket}/.ready")
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def _sit(label: str, workdir: Path, args: list[str]) -> int:
    """The sitter: weed in its own session until stdin closes, then weed's group killed and its directory gone."""
    env = dict(os.environ, **{LABEL_ENV: label})
    with open(workdir / "weed.log", "ab") as log:
        weed = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                start_new_session=True, cwd=workdir)
    try:
        sys.stdin.buffer.read()            # returns at EOF: the caller stopped us or is gone
    finally:
        for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            if weed.poll() is None:
                try:
                    os.killpg(weed.pid, sig)
                    weed.wait(timeout=wait_s)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sep = sys.argv.index("--")
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # a Ctrl-C to the caller's group: the caller decides
    sys.exit(_sit(sys.argv[1], Path(sys.argv[2]), sys.argv[sep + 1:]))
