"""A watchdog that removes a run's containers, network and lazyfs mounts if the harness dies without cleaning up.

The harness starts it with a pipe on stdin and keeps the write end. When the harness exits in any way, even
kill -9, the pipe closes; unless the harness said `release` first, the reaper removes everything carrying the
run's label. The testcontainers Ryuk pattern, without a registry.
"""
from __future__ import annotations

import subprocess
import sys

LABEL_RUN = "kafka-chaos.run"


def remove_labelled(label: str) -> int:
    """Remove containers (with their volumes) and networks carrying `label` (k=v). Returns containers removed."""
    import docker

    client = docker.from_env(timeout=120)
    removed = 0
    for c in client.containers.list(all=True, ignore_removed=True, filters={"label": label}):
        try:
            c.remove(force=True, v=True)
            removed += 1
        except docker.errors.NotFound:
            pass
    for n in client.networks.list(filters={"label": label}):
        try:
            n.remove()
        except docker.errors.NotFound:
            pass
    return removed


class Reaper:
    """Handle held by the harness for one run's lifetime."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "kafka_chaos.cluster.reaper", f"{LABEL_RUN}={run_id}"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C to the harness's process group must not kill the reaper
        )

    def release(self) -> None:
        """The harness cleaned up (or keeps the cluster on purpose): the reaper exits without removing."""
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write(b"release\n")
                self._proc.stdin.close()
            except (BrokenPipeError, ValueError):
                pass
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()


def main() -> None:
    label = sys.argv[1]
    released = False
    for line in sys.stdin.buffer:
        if line.strip() == b"release":
            released = True
    if not released:
        try:
            remove_labelled(label)
        finally:                                           # Docker gone too: the mounts must still go
            if label.startswith(f"{LABEL_RUN}="):
                from kafka_chaos.cluster import powerfs

                powerfs.remove_run(label.split("=", 1)[1])  # the brokers' lazyfs mounts, after their containers


if __name__ == "__main__":
    main()
