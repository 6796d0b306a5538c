"""Node log lines as Kafka's KRaft controller writes them, for synthetic runs: the fencing decisions
history/controller_log.py reads back (docs/history.md, "logs/<node>.log")."""
from __future__ import annotations

from datetime import datetime, timezone

_TEXT = {
    "registered": "Registering a new incarnation of broker {b}. Previous incarnation ID was x; new incarnation ID is "
                  "y. Generated 0 record(s) to clean up previous incarnations. Broker epoch will become 100. "
                  "(org.apache.kafka.controller.ClusterControlManager)",
    "fenced": "Fencing broker {b} at epoch 100 because its session has timed out. "
              "(org.apache.kafka.controller.ReplicationControlManager)",
    "unfenced": "The request from broker {b} to unfence has been granted because it has caught up with the offset "
                "of its register broker record 100. (org.apache.kafka.controller.BrokerHeartbeatManager)",
}


def fencing_line(t_ns: int, broker: int, event: str, controller: int = 101) -> str:
    """One controller log line recording `event` (registered | fenced | unfenced) for `broker` at t_ns (to the ms)."""
    t = datetime.fromtimestamp(t_ns // 1_000_000_000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    ms = t_ns // 1_000_000 % 1000
    return f"[{t},{ms:03d}] INFO [QuorumController id={controller}] {_TEXT[event].format(b=broker)}\n"


def fatal_fault_lines(t_ns: int, why: str, cause: str) -> str:
    """A broker's fault handler halting it (ProcessTerminatingFaultHandler), with its cause on the next line."""
    t = datetime.fromtimestamp(t_ns // 1_000_000_000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return f"[{t},{t_ns // 1_000_000 % 1000:03d}] ERROR Encountered fatal fault: {why} " \
           f"(org.apache.kafka.server.fault.ProcessTerminatingFaultHandler)\n{cause}\n"
