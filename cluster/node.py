"""One Kafka node (broker or controller) in its container, and the primitives fault modules call.

Primitives only: kill with a signal, clean stop, start, pause / unpause, iptables in the node's network namespace
(through `docker exec` with NET_ADMIN, which works wherever Docker does), and its log. No scheduling here.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import docker.errors

import docker
from kafka_chaos.base.errors import HarnessError
from kafka_chaos.base.waiting import retry_call

log = logging.getLogger(__name__)


class NodeCommandError(HarnessError):
    """A command inside a node failed."""


@dataclass
class Node:
    id: int
    role: str               # "broker" or "controller"
    name: str               # container name
    ip: str
    client: docker.DockerClient

    def __str__(self) -> str:
        return f"{self.role} {self.id} ({self.name}, {self.ip})"

    @property
    def container(self):
        return self.client.containers.get(self.name)

    # ---- state -------------------------------------------------------------------------------------------
    def state(self) -> str:
        """Docker's status: running, paused, exited, created, or missing."""
        try:
            return self.container.status
        except docker.errors.NotFound:
            return "missing"

    def is_running(self) -> bool:
        return self.state() == "running"

    # ---- process primitives ------------------------------------------------------------------------------
    def kill(self, signal: str = "SIGKILL") -> None:
        """Send a signal to the JVM (PID 1). SIGKILL leaves the page cache, as a process crash does."""
        c = self.container
        if c.status == "paused":
            c.unpause()
        if c.status in ("running", "paused") or signal != "SIGKILL":
            c.kill(signal=signal)
        if signal == "SIGKILL":
            c.wait(timeout=30)

    def stop(self, timeout: int = 60) -> None:
        """Clean shutdown: SIGTERM, so the broker does a controlled shutdown; SIGKILL only after `timeout`."""
        c = self.container
        if c.status == "paused":
            c.unpause()
        c.stop(timeout=timeout)

    def start(self) -> None:
        """Start a stopped or killed node; it keeps its data, its IP and its config."""
        c = self.container
        if c.status == "paused":
            c.unpause()
        elif c.status != "running":
            c.start()

    def pause(self) -> None:
        """Freeze every process of the node (cgroup freezer): connections stay open, requests hang.

        runc gives up when the freezer does not reach FROZEN in time ("unable to freeze", seen under load while a
        JVM was busy) and thaws the cgroup again, so the pause is simply asked for again, for up to 15 s."""
        c = self.container
        if c.status != "running":
            return

        def freeze():
            try:
                c.pause()
            except docker.errors.APIError as e:
                if "unable to freeze" in str(e):
                    raise _FreezeFailed(e) from e
                raise
        try:
            retry_call(freeze, timeout=15, interval=0.5, errors=_FreezeFailed,
                       on_retry=lambda e: log.warning("pausing %s: %s; trying again", self, e.args[0]))
        except _FreezeFailed as e:
            raise e.args[0] from None

    def unpause(self) -> None:
        c = self.container
        if c.status == "paused":
            c.unpause()

    # ---- commands and network ----------------------------------------------------------------------------
    def exec(self, cmd: list[str], check: bool = True) -> tuple[int, str]:
        c = self.container
        if c.status != "running":
            raise NodeCommandError(f"cannot run {cmd[0]} on {self}: it is {c.status}",
                                   "start or unpause the node first")
        rc, out = c.exec_run(cmd, demux=False)
        text = (out or b"").decode(errors="replace")
        if check and rc != 0:
            raise NodeCommandError(f"`{' '.join(cmd)}` on {self} exited {rc}: {text.strip()}")
        return rc, text

    def iptables(self, *args: str, check: bool = True) -> str:
        """Run iptables inside this node's network namespace (-w: wait for the xtables lock)."""
        return self.exec(["iptables", "-w", "5", *args], check=check)[1]

    def read_file(self, path: str) -> str | None:
        rc, out = self.exec(["cat", path], check=False)
        return out if rc == 0 else None

    def logs(self, tail: int | str = "all") -> str:
        try:
            return self.container.logs(tail=tail).decode(errors="replace")
        except docker.errors.NotFound:
            return ""


class _FreezeFailed(Exception):
    """runc could not freeze the container this time (args[0]: Docker's error)."""
