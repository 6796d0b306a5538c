"""The workload's consumer-group members as processes a fault may kill and replace (subscribe mode).

`GroupMembers(workload)` is what the harness hands the Nemesis for the `consumer-kill` fault (it has the methods of
nemesis.consumers.ConsumerProcesses; neither package imports the other). A kill is SIGKILL: the member neither
leaves the group nor commits, and whatever it had received but not yet journaled is gone with it (docs/history.md,
"Consumer groups": what that allows in each commit mode). Its replacement is a new process and a new member, named
`<name>-r<k>` (c1 -> c1-r1 -> c1-r2), so each process keeps its own journals and read sequence. A Java client's
member (`jc0`, workloads/java/JavaGroupConsumer.java) is killed in its JVM (its pid in group-NAME.pid), then its
wrapper.
"""
from __future__ import annotations

import threading
from dataclasses import replace

from kafka_chaos.workloads.group_consumer import GroupConsumerSpec, run_group_consumer
from kafka_chaos.workloads.java_client import group_pid_file, signal_jvm
from kafka_chaos.workloads.run import WorkerFailed


class GroupMembers:
    def __init__(self, workload):
        self.workload = workload
        self._lock = threading.Lock()
        self._replacements: dict[str, GroupConsumerSpec] = {}    # killed name -> its replacement, not started yet
        self._generation: dict[str, int] = {}                    # c1 -> how many replacements it has had
        self._started: list = []                                  # (ready event, process) of each replacement

    def killable(self) -> list[str]:
        with self._lock:
            return [name for name, (_, proc) in self.workload.members.items() if proc.is_alive()]

    def kill(self, name: str) -> tuple[int, str]:
        with self._lock:
            if name not in self.workload.members:
                raise WorkerFailed(f"no consumer-group member named {name}", "pick one of " +
                                   ", ".join(self.workload.members))
            spec, proc = self.workload.members.pop(name)
            if spec.client == "java":          # the JVM itself: its wrapper's death would only close its stdin
                signal_jvm(group_pid_file(spec.journal_dir, spec.name), "SIGKILL")
            proc.kill()
            proc.join(10)
            self.workload.retire(proc, spec.index)
            base = name.split("-r")[0]
            self._generation[base] = self._generation.get(base, 0) + 1
            self._replacements[name] = replace(spec, name=f"{base}-r{self._generation[base]}")
            return proc.pid, self._replacements[name].name

    def restart(self, name: str) -> None:
        """Start the replacement of `name`; idempotent (nothing to do once it started). It is not waited for: it
        joins the group in its own time (a rebalance), while the schedule plays on."""
        with self._lock:
            spec = self._replacements.pop(name, None)
            if spec is not None:       # its ready event is kept: a spawned child unpickles it after start()
                self._started.append(self.workload.spawn_member(run_group_consumer, spec))
