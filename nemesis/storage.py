"""Storage faults: power loss (the node dies and its disk keeps only what was fsync'ed), a full disk, a damaged file.

All three need the cluster's power-loss layer (`--power-loss-fs`, cluster/powerfs.py: each broker's log dir on a
lazyfs mount on the host, with a size limit), which gives the harness the broker's disk while the broker is down.

Power loss. Start: kill -9 the target brokers at once, then cut their disks (the lazyfs processes die with every
unsynced page) and mount fresh ones on the same disk directories. Heal: start the brokers, which recover from what
their disks kept. The start row's effect is `power_loss`, which the ISR model replays as a kill that also drops
each replica's unflushed tail.
"""
from __future__ import annotations

import logging
import os
import random
from pathlib import Path

from kafka_chaos.base.errors import UsageError
from kafka_chaos.base.waiting import WaitTimeout, wait_until
from kafka_chaos.nemesis.base import Fault, FaultError, Target
from kafka_chaos.nemesis.process import _on_all

log = logging.getLogger(__name__)


class PowerLoss(Fault):
    """Power off the target brokers (all at once): processes killed, unsynced data dropped; heal powers them on."""

    def __init__(self, target: Target, name: str | None = None):
        super().__init__(name or "power-loss")
        self.target = target

    def _start(self, cluster) -> None:
        ids = self.target.resolve(cluster)
        layers = [cluster.power_layer(i) for i in ids]        # UsageError before anything is touched
        nodes = [cluster.node(i) for i in ids]

        def power_on():
            _on_all(lambda layer: layer.mount(), layers)      # a half-done cut is finished first
            _on_all(lambda n: n.start(), nodes)

        try:
            _on_all(lambda n: n.kill("SIGKILL"), nodes)
            _on_all(lambda layer: layer.power_cycle(), layers)
        except BaseException:
            power_on()                                       # a half-applied step is undone, not left behind
            raise
        self._applied(ids, {"effect": "power_loss", "signal": "SIGKILL"} | self.target.describe(), power_on)


class DiskFull(Fault):
    """Fill the target brokers' disks (a ballast takes the whole size limit of their power-loss layer): the next
    write that grows a file fails with ENOSPC, Kafka takes the log dir offline, and a broker whose only log dir
    is offline halts (LogManager.handleLogDirFailure: "Shutdown broker because all log dirs ... have failed").
    Start waits until the brokers' processes are gone; heal frees the space and starts them (restarts one that
    did not halt, so its log dir comes back online). The model sees a kill."""

    def __init__(self, target: Target, halt_timeout_s: float = 60, name: str | None = None):
        super().__init__(name or "disk-full")
        self.target, self.halt_timeout_s = target, halt_timeout_s

    def _start(self, cluster) -> None:
        ids = self.target.resolve(cluster)
        layers = [cluster.power_layer(i) for i in ids]
        nodes = [cluster.node(i) for i in ids]

        def free_and_restart():
            for layer in layers:
                layer.free()
            for n in nodes:
                if n.is_running():
                    n.stop(timeout=30)           # a broker that did not halt: its log dir comes back on restart
                n.start()

        try:
            for layer in layers:
                layer.fill()
            halted = _wait_exited(nodes, self.halt_timeout_s)
        except BaseException:
            free_and_restart()
            raise
        self._applied(ids, {"effect": "kill", "cause": "disk_full", "halted": halted} | self.target.describe(),
                      free_and_restart)


def _wait_exited(nodes, timeout_s: float) -> bool:
    """Whether every node's process ended within `timeout_s` (Kafka halts on its next failed write)."""
    try:
        wait_until(lambda: all(n.state() in ("exited", "dead") for n in nodes), timeout_s, "brokers still running")
        return True
    except WaitTimeout:
        log.warning("disk full: %s still running after %.0f s", [n.id for n in nodes], timeout_s)
        return False


# What the damage fault can hit in a broker's log dir: (kind -> the file, relative to the log dir)
DAMAGE_FILES = ("segment", "index", "leader-epoch-checkpoint", "quorum-state")
DAMAGE_MODES = ("flip", "truncate")


def damage_path(mnt: Path, kind: str, topic: str, partition: int) -> Path:
    """The file of `kind`: the newest segment or offset index of topic/partition, its leader-epoch-checkpoint, or
    the KRaft quorum-state of the metadata log."""
    if kind == "quorum-state":
        return mnt / "__cluster_metadata-0" / "quorum-state"
    d = mnt / f"{topic}-{partition}"
    if kind == "leader-epoch-checkpoint":
        return d / "leader-epoch-checkpoint"
    files = sorted(d.glob("*.log" if kind == "segment" else "*.index"))
    if not files:
        raise FaultError(f"no {kind} file of {topic}/{partition} in {d}", "write to the topic first")
    return files[-1]


def damage(path: Path, mode: str, seed: int) -> dict:
    """Flip 16 bytes' bits, or truncate, at a seeded point in the file's second half; fsync'ed, so it survives."""
    size = path.stat().st_size
    if size == 0:
        raise FaultError(f"{path.name} is empty: nothing to damage", "write to the topic first")
    at = random.Random(seed).randrange(size // 2, size)
    with open(path, "r+b") as f:
        if mode == "truncate":
            f.truncate(at)
        else:
            f.seek(at)
            chunk = f.read(16)
            f.seek(at)
            f.write(bytes(b ^ 0xFF for b in chunk))
        f.flush()
        os.fsync(f.fileno())
    return {"at": at, "size": size}


class Damage(Fault):
    """Kill one broker (-9), damage a chosen file of its log dir while it is down (flip bits in, or truncate, a
    segment, its index, the leader-epoch-checkpoint or the KRaft quorum-state), and restart it on heal; Kafka's
    recovery (an unclean shutdown re-validates every batch past the recovery point) and replication should repair
    it. The model reads the `damage` effect as a kill that also loses that replica's log of the partition."""

    def __init__(self, target: Target, kind: str = "segment", mode: str = "flip", topic: str = "chaos",
                 partition: int = 0, seed: int = 0, name: str | None = None):
        if kind not in DAMAGE_FILES:
            raise UsageError(f"cannot damage '{kind}'", f"pick one of {', '.join(DAMAGE_FILES)}")
        if mode not in DAMAGE_MODES:
            raise UsageError(f"damage mode '{mode}' is unknown", f"pick one of {', '.join(DAMAGE_MODES)}")
        super().__init__(name or "damage")
        self.target, self.kind, self.mode = target, kind, mode
        self.topic, self.partition, self.seed = topic, partition, seed

    def _start(self, cluster) -> None:
        ids = self.target.resolve(cluster)
        if len(ids) != 1:
            raise UsageError(f"damage hits one broker (a minority), not {ids}", "pass one --target")
        layer, node = cluster.power_layer(ids[0]), cluster.node(ids[0])
        node.kill("SIGKILL")
        try:
            path = damage_path(layer.mnt, self.kind, self.topic, self.partition)
            where = damage(path, self.mode, self.seed)
        except BaseException:
            node.start()
            raise
        self._applied(ids, {"effect": "damage", "signal": "SIGKILL", "file": self.kind, "mode": self.mode,
                            "path": str(path.relative_to(layer.mnt)), "topic": self.topic,
                            "partition": self.partition, **where} | self.target.describe(), node.start)
