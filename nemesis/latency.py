"""Latency and jitter with tc netem on the target nodes' eth0, where the kernel has netem.

Where it does not (tc answers "Specified qdisc kind is unknown"), start refuses with EnvironmentProblem and
touches nothing: a latency fault that silently did nothing would make a run claim a fault it never had.
"""
from __future__ import annotations

from kafka_chaos.base.errors import EnvironmentProblem, UsageError
from kafka_chaos.cluster.node import NodeCommandError
from kafka_chaos.nemesis import netrules
from kafka_chaos.nemesis.base import Fault, Target

NO_NETEM = "Specified qdisc kind is unknown"


class NetemUnavailable(EnvironmentProblem):
    """This kernel has no sch_netem: latency faults cannot run here."""


def netem_available(node) -> tuple[bool, str]:
    """Probe a running node: add then delete a 0 ms netem qdisc. (ok, tc's answer)."""
    rc, out = node.exec(["sh", "-c", "tc qdisc add dev eth0 root netem delay 0ms && tc qdisc del dev eth0 root"],
                        check=False)
    return rc == 0, out.strip()


class Latency(Fault):
    """Delay every packet the targets send by delay_ms ± jitter_ms."""

    def __init__(self, target: Target, delay_ms: int = 100, jitter_ms: int = 10, name: str = "latency"):
        if delay_ms <= 0 or jitter_ms < 0:
            raise UsageError(f"latency {delay_ms} ms ± {jitter_ms} ms: delay must be > 0, jitter >= 0",
                             "use e.g. --delay-ms 100 --jitter-ms 10")
        super().__init__(name)
        self.target, self.delay_ms, self.jitter_ms = target, delay_ms, jitter_ms

    def _start(self, cluster) -> None:
        ids = self.target.resolve(cluster)
        nodes = [cluster.node(i) for i in ids]
        done = []
        try:
            for n in nodes:
                rc, out = netrules.run_in_netns(
                    n, f"tc qdisc add dev eth0 root netem delay {self.delay_ms}ms {self.jitter_ms}ms")
                if rc != 0:
                    if NO_NETEM in out:
                        raise NetemUnavailable(
                            f"latency needs tc netem, and this kernel has none (tc: {out.strip()})",
                            "run on a kernel with sch_netem (modprobe sch_netem), or leave latency faults out")
                    raise NodeCommandError(f"tc netem on {n} failed ({rc}): {out.strip()}")
                done.append(n)
        except BaseException:
            for n in done:
                netrules.run_in_netns(n, "tc qdisc del dev eth0 root")
            raise
        self._applied(ids, {"effect": "latency", "delay_ms": self.delay_ms, "jitter_ms": self.jitter_ms}
                      | self.target.describe(), lambda: self._remove(nodes))

    def _remove(self, nodes) -> None:
        for n in nodes:
            if netrules.has_namespace(n):
                netrules.run_in_netns(n, "tc qdisc show dev eth0 | grep -q netem && tc qdisc del dev eth0 root; true")
