"""A Spark standalone cluster on this machine's loopback, from the distribution the pyspark package ships.

A master and N workers (`spark-class ...deploy.master.Master` / `...deploy.worker.Worker`), sized for a 2-core
machine. Everything they write (work dirs, logs, pid files, scratch, JVM temp files) is under one root, and every
process they start (executors too: children of the workers, which inherit their environment) carries a marker in
its environment, so `leftovers()` finds anything that outlived `stop()`.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pyspark

from kafka_chaos.checkers.spark import session as checker_spark

SPARK_HOME = Path(pyspark.__file__).parent
MARKER = "KAFKA_CHAOS_SPARK_STANDALONE"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def marked_processes(token: str) -> list[int]:
    """Pids of live processes whose environment holds MARKER=token (zombies have no environment left)."""
    needle = f"{MARKER}={token}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if needle in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:
            continue                                  # gone, or not ours to read
    return found


class Standalone:
    def __init__(self, root: Path, workers: int = 2, cores: int = 1, memory: str = "2g"):
        self.root, self.workers, self.cores, self.memory = root, workers, cores, memory
        self.token = uuid.uuid4().hex
        self.port, self.ui_port = free_port(), free_port()
        self.procs: list[subprocess.Popen] = []

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of every process of this cluster, and of a driver that should leave nothing outside it."""
        dirs = {name: self.root / name for name in ("logs", "pids", "work", "scratch", "tmp", "conf")}
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        return {**os.environ, MARKER: self.token, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_CONF_DIR": str(dirs["conf"]),      # empty: no spark-defaults.conf from elsewhere
                "SPARK_LOG_DIR": str(dirs["logs"]), "SPARK_PID_DIR": str(dirs["pids"]),
                "SPARK_WORKER_DIR": str(dirs["work"]), "SPARK_LOCAL_DIRS": str(dirs["scratch"]),
                "SPARK_DAEMON_MEMORY": "512m", "TMPDIR": str(dirs["tmp"]),
                "SPARK_DAEMON_JAVA_OPTS": f"-Djava.io.tmpdir={dirs['tmp']}",
                "SPARK_SUBMIT_OPTS": f"-Djava.io.tmpdir={dirs['tmp']}",      # a driver's JVM (spark-submit's)
                # executors' JVMs: the app's setting, which pyspark passes on when it launches the driver
                "PYSPARK_SUBMIT_ARGS": f"--conf spark.executor.extraJavaOptions=-Djava.io.tmpdir={dirs['tmp']} "
                                       "pyspark-shell",
                "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false", **extra}

    def _spawn(self, name: str, *args: str) -> None:
        env = self.env()                                  # makes the directories
        log = open(self.root / "logs" / f"{name}.out", "wb")
        self.procs.append(subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], env=env,
                                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        log.close()

    def start(self, timeout: float = 120) -> Standalone:
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.ui_port))
        self._wait(lambda s: s is not None, timeout, "the master's status page")
        for i in range(self.workers):
            self._spawn(f"worker{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                        "--webui-port", "0", "--cores", str(self.cores), "--memory", self.memory,
                        "--work-dir", str(self.root / "work" / f"worker{i}"), self.url)
        self._wait(lambda s: s and sum(w["state"] == "ALIVE" for w in s["workers"]) == self.workers, timeout,
                   f"{self.workers} workers registered")
        return self

    def status(self) -> dict | None:
        """The master's own JSON status (workers, running and completed applications), None until it answers."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as r:
                return json.loads(r.read())
        except OSError:
            return None

    def idle(self, timeout: float = 60) -> dict:
        """The status once no application runs: a driver's end reaches the master a moment after the driver's."""
        self._wait(lambda s: s is not None and not s["activeapps"], timeout, "idle master")
        return self.status()

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.procs):
                raise RuntimeError(f"a Spark daemon exited while waiting for {what}: see {self.root / 'logs'}")
            if ready(self.status()):
                return
            time.sleep(0.5)
        raise TimeoutError(f"no {what} after {timeout:.0f} s: see {self.root / 'logs'}")

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM the workers first (each kills its executors on the way out), then the master; SIGKILL what is
        still there after `timeout`."""
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def leftovers(self) -> list[int]:
        return marked_processes(self.token)

    def files_outside(self, allowed: Path, top: Path = Path("/tmp")) -> set[str]:
        """Files under `top` but outside `allowed` that a process of ours holds open now (a JVM's own perf-data
        file excepted, which it removes at exit): where its scratch would be if the redirection missed it. The
        installation itself (this virtualenv's pyspark jars, and the checkers' own files, such as the scheduler pools
        the driver reads at start) is not scratch, even when the checkout lives in /tmp."""
        found = set()
        installed = (f"{Path(sys.prefix).resolve()}/", f"{Path(sys.base_prefix).resolve()}/",
                     f"{checker_spark.POOLS_FILE.resolve().parent}/")
        for pid in self.leftovers():
            try:
                targets = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
            except OSError:
                continue
            found |= {t for t in targets if t.startswith(f"{top}/") and not t.startswith(f"{allowed}/")
                      and not t.startswith(f"{top}/hsperfdata_") and not t.startswith(installed)}
        return found


def assert_same(got: dict, expected: dict) -> None:
    """Two checks' {run: (verdict without the checker's own keys, anomalies table)} agree run for run."""
    assert got.keys() == expected.keys()
    for name, (verdict, table) in expected.items():
        assert got[name][0] == verdict, name
        assert got[name][1].equals(table), name
