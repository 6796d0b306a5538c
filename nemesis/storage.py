"""Storage faults: power loss (the node dies and its disk keeps only what was fsync'ed).

A power loss needs the cluster's power-loss layer (`--power-loss-fs`, cluster/powerfs.py: each broker's log dir on
a lazyfs mount). Start: kill -9 the target brokers at once, then cut their disks (the lazyfs processes die with
every unsynced page) and mount fresh ones on the same disk directories. Heal: start the brokers, which recover
from what their disks kept. The start row's effect is `power_loss`, which the ISR model replays as a kill that also
drops each replica's unflushed tail.
"""
from __future__ import annotations

from kafka_chaos.nemesis.base import Fault, Target
from kafka_chaos.nemesis.process import _on_all


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
