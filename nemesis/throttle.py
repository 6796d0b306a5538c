"""Slow nodes: a CPU quota on a broker's container (the Docker SDK's update), so it falls behind.

A follower starved of CPU fetches slower than its leader appends, stops reaching the leader's log end, and the
leader shrinks it out of the ISR replica.lag.time.max.ms later (Partition.getOutOfSyncReplicas), while its
heartbeats (a few bytes a second) still reach the controller. The quota is the cgroup's cpu.cfs_quota_us per
cpu.cfs_period_us; heal puts the container's own values back (Docker's update treats 0 as "leave alone", so an
unlimited quota is restored with -1, which is what the cgroup holds for "no limit").

Disk I/O is not throttled: on this host's cgroup v1 the block-I/O weight needs the BFQ scheduler (the disk uses
none) and the blkio throttles apply to direct I/O only, not to the page-cache writeback that carries Kafka's
writes; Docker's update offers no device throttles at all. See README, "Slow nodes".
"""
from __future__ import annotations

from dataclasses import dataclass

import docker.errors

from kafka_chaos.base.errors import UsageError
from kafka_chaos.nemesis.base import Fault, FaultError, Target

PERIOD_US = 100_000          # the kernel's CFS period when the container sets none
MIN_QUOTA_US = 1_000         # Docker refuses a quota below 1 ms


@dataclass(frozen=True)
class CpuLimits:
    """A container's CPU limits as Docker holds them (0 means unset)."""
    period_us: int
    quota_us: int
    nano_cpus: int

    @classmethod
    def of(cls, container) -> "CpuLimits":
        container.reload()
        h = container.attrs["HostConfig"]
        return cls(int(h.get("CpuPeriod") or 0), int(h.get("CpuQuota") or 0), int(h.get("NanoCpus") or 0))

    @property
    def unlimited(self) -> bool:
        return self.quota_us <= 0 and self.nano_cpus == 0

    def as_dict(self) -> dict:
        return {"cpu_period_us": self.period_us, "cpu_quota_us": self.quota_us, "nano_cpus": self.nano_cpus}


def set_quota(node, quota_us: int) -> None:
    """Put a CFS quota on the node's container (per its own period, which is left alone); -1 lifts it. The
    container may be running or stopped: the setting outlives a restart."""
    try:
        node.client.api.update_container(node.name, cpu_quota=quota_us)
    except docker.errors.APIError as e:
        raise FaultError(f"docker update of {node}'s CPU quota failed: {e.explanation or e}",
                         "check that the Docker engine supports CPU quotas (docker info: CPU CFS period/quota)")


def restore(node, original: CpuLimits) -> None:
    """Put back exactly the limits the container had: its own quota and period, or no quota at all."""
    set_quota(node, -1 if original.unlimited else original.quota_us)


def unthrottle(node) -> bool:
    """Lift any CFS quota from a container created without one (the sweep's baseline). True when it lifted one."""
    limits = CpuLimits.of(node.container)
    if limits.quota_us > 0 and limits.nano_cpus == 0:
        set_quota(node, -1)
        return True
    return False


class Slow(Fault):
    """Cap the target brokers' CPU at `cpus` (e.g. 0.02 = 2% of one core); heal restores their own limits."""

    def __init__(self, target: Target, cpus: float = 0.02, name: str = "slow"):
        if not MIN_QUOTA_US <= round(cpus * PERIOD_US) <= 64 * PERIOD_US:
            raise UsageError(f"slow: --cpus {cpus} is outside 0.01 .. 64 (a CFS quota of 1 ms to 64 periods)",
                             "use e.g. --cpus 0.02")
        super().__init__(name)
        self.target, self.cpus = target, cpus

    def _start(self, cluster) -> None:
        ids = self.target.resolve(cluster)
        nodes = [cluster.node(i) for i in ids]
        originals = [CpuLimits.of(n.container) for n in nodes]
        for n, o in zip(nodes, originals):
            if o.nano_cpus:
                raise UsageError(f"slow: {n} has a --cpus limit (NanoCpus {o.nano_cpus}) that a CFS quota would "
                                 "conflict with", "start the cluster without CPU limits")
        quotas = [max(MIN_QUOTA_US, round(self.cpus * (o.period_us or PERIOD_US))) for o in originals]
        details = {"effect": "slow", "cpus": self.cpus, "cpu_quota_us": quotas,
                   "original": {str(n.id): o.as_dict() for n, o in zip(nodes, originals)}} | self.target.describe()
        done = []
        try:
            for n, q in zip(nodes, quotas):
                set_quota(n, q)
                done.append(n)
        except BaseException:
            for n, o in zip(done, originals):
                restore(n, o)
            raise
        self._applied(ids, details, lambda: [restore(n, o) for n, o in zip(nodes, originals)])
