"""The exactly-once workload (`--workload eos`): a seeded input topic, N processors in one consumer group
(workloads/eos.py), the output topic under test (the run's topic: faults, the sampler, the model and the final drain
all aim at it), live read_committed consumers of the output in assign mode.

The input topic (`<topic>-in`) has the output topic's partitions, replicas and settings; before any fault, one
idempotent producer writes `records_per_partition` records to each partition (history/eos.py's `input_value`) and the
workload verifies record i landed at offset i. At the end, with the processors stopped, the group's committed offset
of each input partition is read from the brokers: the checker expects an output for exactly the input records below
it. meta.json's `eos` says all of it.

`EosMembers` is what the harness hands the Nemesis for `consumer-kill` (the protocol of
nemesis.consumers.ConsumerProcesses): a killed processor's replacement is `<slot>-r<k>`, a new process under the
slot's transactional.id.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, replace

from kafka_chaos.history.eos import abort_bound_ms, input_topic, input_value
from kafka_chaos.workloads.consumer import ConsumerSpec, run_consumer
from kafka_chaos.workloads.eos import SLOTS, ProcessorSpec, run_processor
from kafka_chaos.workloads.run import LiveStats, WorkerFailed, Workload
from kafka_chaos.workloads.sampler import ClusterSampler
from kafka_chaos.workloads.topic import partitions_of

log = logging.getLogger(__name__)

MAX_PROCESSES = 256             # processors and their replacements over a run (counter slots)


@dataclass(frozen=True)
class EosConfig:
    processors: int = 3
    records_per_partition: int = 20000
    rate: float | None = 2000.0      # records per second over all processors (None: as fast as they can)
    batch: int = 50                  # records per transaction at most
    abort_every: int = 0             # every n-th transaction of a processor aborted on purpose (0: none)
    transaction_timeout_ms: int = 20000
    replica_assignment: tuple = ()   # the input topic's, as the output topic's (the model's layout)
    topic_settings: tuple = ()       # (key, value) pairs: the output topic's configs, for the input topic too
    seed: int = 0
    clients: tuple[str, ...] = ("librdkafka",)    # each runs `processors` processors, all in the one group


class EosWorkload(Workload):
    def __init__(self, cluster, history, config, eos: EosConfig):
        super().__init__(cluster, history, config)
        self.eos = eos
        self._proc_counters = self._ctx.Array("q", MAX_PROCESSES * SLOTS, lock=False)
        self.processors: dict[str, tuple] = {}      # alive processor name -> (spec, process)
        self._next_index = 0

    # ---- the input -------------------------------------------------------------------------------------------
    def _seed_input(self, partitions: list[int]) -> dict[int, int]:
        from confluent_kafka import Producer

        topic, n, e = input_topic(self.config.topic), self.eos.records_per_partition, self.eos
        if topic in self.cluster.topics():
            self.cluster.delete_topics([topic])
        self.cluster.create_topic(topic, len(partitions), 3, configs=dict(e.topic_settings), timeout=60,
                                  replica_assignment=[list(r) for r in e.replica_assignment] or None)
        bad = []

        def report(err, msg):
            p, i = msg.partition(), int(msg.value().decode().rsplit("-", 1)[1])
            if err is not None or msg.offset() != i:
                bad.append((p, i, msg.offset(), err))

        prod = Producer({"bootstrap.servers": self.cluster.bootstrap_servers, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 20, "on_delivery": report,
                         "queue.buffering.max.messages": 1_000_000})
        for i in range(n):
            for p in partitions:
                while True:
                    try:
                        prod.produce(topic, input_value(e.seed, p, i), str(p), p)
                        break
                    except BufferError:           # the queue is full: let deliveries drain it
                        prod.poll(0.5)
            if i % 1000 == 999:
                prod.poll(0)
        left = prod.flush(120)
        if left or bad:
            raise WorkerFailed(f"seeding {topic}: {left} records unsent, {len(bad)} not at their index "
                               f"(first {bad[:1]})", "rerun; the input is written before any fault")
        return {p: n for p in partitions}

    # ---- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> None:
        cfg, e = self.config, self.eos
        partitions = partitions_of(self.cluster, cfg.topic)
        ends = self._seed_input(partitions)
        journal, boot = str(self.history.journal_dir), self.cluster.bootstrap_servers
        group = f"kafka-chaos-eos-{self.history.run_id}"
        java = None
        if "java" in e.clients:
            from kafka_chaos.workloads.java_client import build

            java = build(self.cluster.version)
            (self.history.dir / "logs").mkdir(parents=True, exist_ok=True)
        n = e.processors * len(e.clients)
        specs = [ProcessorSpec(0, f"{'je' if c == 'java' else 'e'}{i}", boot, input_topic(cfg.topic), cfg.topic,
                               journal, group, f"kafka-chaos-{self.history.run_id}", batch=e.batch,
                               abort_every=e.abort_every, rate=e.rate / n if e.rate else None,
                               transaction_timeout_ms=e.transaction_timeout_ms, flush_interval_s=cfg.flush_interval_s,
                               client_log=str(self.history.dir / "logs" / "java-clients.log") if c == "java" else
                               self.client_log, client=c, classpath=java.classpath if c == "java" else "")
                 for c in e.clients for i in range(e.processors)]
        self.history.update_meta(
            topic=cfg.topic, consumer_mode="assign", workload="eos",
            producers=[s.profile().to_meta() for s in specs], clients=self._clients_meta(java),
            eos={"input_topic": input_topic(cfg.topic), "seed": e.seed, "input_ends": {str(p): n for p, n in
                                                                                        ends.items()},
                 "processors": e.processors, "group": group, "batch": e.batch, "abort_every": e.abort_every,
                 "transaction_timeout_ms": e.transaction_timeout_ms,
                 "transaction_version": getattr(self.cluster.config, "transaction_version", None)})
        self._started_ns = time.time_ns()
        self.history.update_meta(start_ns=self._started_ns)
        self._sampler = ClusterSampler(self.cluster, cfg.topic, self.history.record_cluster_sample,
                                       cfg.sample_interval_s, lso=True).start()
        ready = [self._spawn_processor(s) for s in specs]
        ready += [self._spawn(run_consumer, ConsumerSpec(i, f"c{i}", boot, cfg.topic, len(partitions), journal,
                                                         flush_interval_s=cfg.flush_interval_s,
                                                         client_log=self.client_log),
                              self._stop_consumers, self._read_counters, self._consumers, f"consumer-c{i}")
                  for i in range(cfg.consumers)]
        self._wait_started(ready, max(cfg.start_timeout_s, cfg.java_start_timeout_s))
        self._last = (time.monotonic(), 0)

    def _spawn_processor(self, spec: ProcessorSpec):
        spec = replace(spec, index=self._next_index)
        self._next_index += 1
        if spec.index >= MAX_PROCESSES:
            raise WorkerFailed(f"more than {MAX_PROCESSES} processor processes", "run shorter or kill less often")
        if spec.client == "java":
            from kafka_chaos.workloads.java_client import run_java_processor as target
        else:
            target = run_processor
        ready, proc = self._spawn(target, spec, self._stop_producers, self._proc_counters, self._producers,
                                  f"processor-{spec.name}")
        self.processors[spec.name] = (spec, proc)
        return ready, proc

    def drain_lso_wait_s(self) -> float:
        """An open transaction is aborted by its coordinator within abort_bound_ms of its start: a drain resting
        at a last stable offset longer than that (from the workload's stop) is stuck, not slow."""
        return abort_bound_ms(self.eos.transaction_timeout_ms) / 1000

    def stop(self) -> None:
        super().stop()
        self.history.update_meta(eos=dict(self.history.meta.get("eos") or {}) | {
            "committed": self._committed_offsets()})

    def _committed_offsets(self) -> dict[str, int | None] | None:
        """The group's committed offset of each input partition, as the brokers answer now (None: unanswered)."""
        from confluent_kafka import Consumer, TopicPartition

        eos = self.history.meta.get("eos") or {}
        parts = [int(p) for p in eos.get("input_ends", {})]
        c = Consumer({"bootstrap.servers": self.cluster.bootstrap_servers, "group.id": eos.get("group"),
                      "enable.auto.commit": False, "isolation.level": "read_committed"})
        try:
            for attempt in range(6):
                try:
                    got = c.committed([TopicPartition(eos["input_topic"], p) for p in parts], timeout=10)
                    return {str(tp.partition): (tp.offset if tp.offset >= 0 else 0) for tp in got}
                except Exception as ex:  # noqa: BLE001 - the coordinator may still be moving
                    log.warning("eos: committed offsets (attempt %d): %s", attempt + 1, ex)
                    time.sleep(5)
            return None
        finally:
            c.close()

    def group_members(self):
        return EosMembers(self)

    def stats(self) -> LiveStats:
        c = self._proc_counters
        sums = [sum(c[i * SLOTS + k] for i in range(self._next_index)) for k in range(SLOTS)]
        return self._live_stats(sums, sum(self._read_counters[:self._n_consumers]))


class EosMembers:
    """The processors as the consumer-kill fault sees them (nemesis.consumers.ConsumerProcesses)."""

    def __init__(self, workload: EosWorkload):
        self.workload = workload
        self._lock = threading.Lock()
        self._replacements: dict[str, ProcessorSpec] = {}
        self._generation: dict[str, int] = {}
        self._started: list = []                # (ready event, process) of each replacement

    def killable(self) -> list[str]:
        with self._lock:
            return [n for n, (_, proc) in self.workload.processors.items() if proc.is_alive()]

    def kill(self, name: str) -> tuple[int, str]:
        with self._lock:
            if name not in self.workload.processors:
                raise WorkerFailed(f"no processor named {name}", "pick one of " + ", ".join(self.workload.processors))
            spec, proc = self.workload.processors.pop(name)
            _signal_jvm(spec, "SIGKILL")
            proc.kill()
            proc.join(10)
            if proc in self.workload._producers:
                self.workload._producers.remove(proc)
            slot = spec.slot
            self._generation[slot] = self._generation.get(slot, 0) + 1
            self._replacements[name] = replace(spec, name=f"{slot}-r{self._generation[slot]}")
            return proc.pid, self._replacements[name].name

    def pause(self, name: str) -> int:
        """SIGSTOP processor `name` (consumer-pause); its pid."""
        import os
        import signal

        with self._lock:
            if name not in self.workload.processors:
                raise WorkerFailed(f"no processor named {name}", "pick one of " + ", ".join(self.workload.processors))
            spec, proc = self.workload.processors[name]
            pid = _signal_jvm(spec, "SIGSTOP") or proc.pid
            if pid == proc.pid:
                os.kill(pid, signal.SIGSTOP)
            return pid

    def resume(self, name: str) -> None:
        import os
        import signal

        with self._lock:
            entry = self.workload.processors.get(name)
            if entry is not None and entry[1].is_alive() and not _signal_jvm(entry[0], "SIGCONT"):
                os.kill(entry[1].pid, signal.SIGCONT)

    def restart(self, name: str) -> None:
        with self._lock:
            spec = self._replacements.pop(name, None)
            if spec is not None:       # its ready event is kept: a spawned child unpickles it after start()
                self._started.append(self.workload._spawn_processor(spec))


def _signal_jvm(spec: ProcessorSpec, sig: str) -> int | None:
    """Send `sig` to a Java processor's JVM (its pid in eos-NAME.pid); its pid, or None for a librdkafka one."""
    import os
    import signal

    if spec.client != "java":
        return None
    try:
        pid = int(open(f"{spec.journal_dir}/eos-{spec.name}.pid").read().split()[0])
        os.kill(pid, getattr(signal, sig))
        return pid
    except (OSError, ValueError, IndexError):
        return None
