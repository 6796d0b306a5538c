"""The workload a run drives: producers, live consumers and the state sampler, then the final drain and history.

Order of calls: start() -> (faults happen) -> stop() -> final_drain() -> finalize(). stats() is cheap and may be
called at any time for a live display: the workers publish their counters in shared memory several times a second.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafka_chaos.base.errors import HarnessError, UsageError
from kafka_chaos.base.waiting import WaitTimeout, wait_until
from kafka_chaos.history.build import HistorySummary
from kafka_chaos.history.client_log import client_log_path
from kafka_chaos.history.writer import HistoryWriter
from kafka_chaos.workloads.consumer import CONSUMER_MODES, ConsumerSpec, run_consumer
from kafka_chaos.workloads.drain import DrainResult, final_drain
from kafka_chaos.workloads.group_consumer import COMMIT_MODES, GroupConsumerSpec, run_group_consumer
from kafka_chaos.workloads.java_client import (
    GO_FILE,
    JavaClient,
    JavaConsumerSpec,
    JavaProducerSpec,
    run_java_consumer,
    run_java_producer,
)
from kafka_chaos.workloads.producer import (
    COUNTER_SLOTS,
    INVOKED,
    SENT_FAIL,
    SENT_INFO,
    SENT_OK,
    ProducerSpec,
    run_producer,
)
from kafka_chaos.workloads.profile import CLIENTS, ProducerProfile
from kafka_chaos.workloads.sampler import ClusterSampler
from kafka_chaos.workloads.topic import partitions_of
from kafka_chaos.workloads.txn_producer import run_txn_producer
from kafka_chaos.workloads.worker import spawn_context

log = logging.getLogger(__name__)


class WorkerFailed(HarnessError):
    """A workload process died or never became ready."""


@dataclass
class WorkloadConfig:
    """What runs against the topic. One producer process per profile; profile names must be unique."""

    topic: str = "chaos"
    producers: list[ProducerProfile] = field(default_factory=lambda: [ProducerProfile()])
    consumers: int = 1
    consumer_mode: str = "assign"
    consumer_clients: tuple[str, ...] = ("librdkafka",)   # each runs `consumers` live consumers
    commit: str = "manual"               # subscribe mode: auto or manual offset commits
    rejoin_s: float | None = 20.0        # subscribe mode: each consumer leaves and rejoins the group this often
    java: JavaClient | None = None       # the compiled Java client (None: built for the cluster's release if needed)
    sample_interval_s: float = 0.5
    flush_interval_s: float = 0.25
    healthy_timeout_s: float = 120
    drain_timeout_s: float = 300
    producer_stop_timeout_s: float | None = None   # None: each profile's delivery timeout + 5 s
    start_timeout_s: float = 60
    java_start_timeout_s: float = 180    # a JVM's start and first metadata, on a loaded host (seen: ~60 s at load
    #                                      48); also a transactional producer's first init_transactions

    def validate(self) -> "WorkloadConfig":
        if not self.producers:
            raise UsageError("a workload needs at least one producer", "give one producer profile or more")
        names = [p.name for p in self.producers]
        if len(set(names)) != len(names):
            raise UsageError(f"producer names must be unique: {names}", "name them p0, p1, ...")
        if self.consumer_mode not in CONSUMER_MODES:
            raise UsageError(f"consumer mode {self.consumer_mode!r} is not one of {', '.join(CONSUMER_MODES)}",
                             "use assign or subscribe")
        if self.consumers < 0:
            raise UsageError(f"consumers {self.consumers} must be 0 or more", "use --consumers 1")
        bad = [c for c in self.consumer_clients if c not in CLIENTS]
        if bad or len(set(self.consumer_clients)) != len(self.consumer_clients):
            raise UsageError(f"consumer clients {self.consumer_clients}: each of {', '.join(CLIENTS)} at most once",
                             "use --client librdkafka, java or both")
        if self.commit not in COMMIT_MODES:
            raise UsageError(f"commit mode {self.commit!r} is not one of {', '.join(COMMIT_MODES)}",
                             "use --commit auto or manual")
        if self.sample_interval_s <= 0:
            raise UsageError(f"sample interval {self.sample_interval_s} must be positive", "use 0.5")
        for p in self.producers:
            p.validate()
        return self


@dataclass(frozen=True)
class LiveStats:
    sends: int
    ok: int
    fail: int
    info: int
    reads: int
    sends_per_s: float          # since the previous stats() call
    elapsed_s: float
    workers_alive: int


class Workload:
    """Producers and consumers (spawned processes) plus the sampler thread, writing into `history`."""

    def __init__(self, cluster, history: HistoryWriter, config: WorkloadConfig | None = None):
        self.cluster = cluster
        self.history = history
        self.config = (config or WorkloadConfig()).validate()
        self._ctx = spawn_context()
        self._stop_producers = self._ctx.Event()
        self._stop_consumers = self._ctx.Event()
        n = len(self.config.producers)
        self._send_counters = self._ctx.Array("q", n * COUNTER_SLOTS, lock=False)
        self._n_consumers = self.config.consumers * len(self.config.consumer_clients)
        self._read_counters = self._ctx.Array("q", max(1, self._n_consumers), lock=False)
        self._producers: list = []
        self._consumers: list = []
        self.members: dict[str, tuple] = {}    # subscribe mode: group member name -> (spec, process), alive ones
        self._retired_reads = 0                # reads counted by member processes killed since (consumer-kill)
        self._sampler: ClusterSampler | None = None
        self._started_ns: int | None = None
        self._last = (time.monotonic(), 0)
        self.drain_result: DrainResult | None = None

    @property
    def client_log(self) -> str:
        """results/<run_id>/logs/clients.log: every workload client's librdkafka lines."""
        return str(client_log_path(self.history.dir))

    # ---- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Spawn the workers and wait until each has its client; start the sampler."""
        cfg = self.config
        partitions = len(partitions_of(self.cluster, cfg.topic))
        boot = self.cluster.bootstrap_servers
        journal = str(self.history.journal_dir)
        client_log = self.client_log
        java = self._java_client()
        if cfg.consumer_mode == "subscribe":
            self.history.update_meta(consumer_commit=cfg.commit, consumer_rejoin_s=cfg.rejoin_s)
        self.history.update_meta(topic=cfg.topic, consumer_mode=cfg.consumer_mode,
                                 producers=[p.to_meta() for p in cfg.producers], clients=self._clients_meta(java))
        self._started_ns = time.time_ns()
        self.history.update_meta(start_ns=self._started_ns)
        if cfg.sample_interval_s:
            self._sampler = ClusterSampler(self.cluster, cfg.topic, self.history.record_cluster_sample,
                                           cfg.sample_interval_s).start()
        java_log = str(self.history.dir / "logs" / "java-clients.log")
        group = f"kafka-chaos-{self.history.run_id}"
        go = str(self.history.journal_dir / GO_FILE)
        waves: dict[bool, list] = {True: [], False: []}      # is it a JVM -> what to spawn
        for k, client in enumerate(cfg.consumer_clients):
            for i in range(cfg.consumers):
                index = k * cfg.consumers + i
                if client == "java" and cfg.consumer_mode == "subscribe":
                    spec = GroupConsumerSpec(index, f"jc{i}", boot, cfg.topic, journal, group, commit=cfg.commit,
                                             rejoin_s=cfg.rejoin_s, flush_interval_s=cfg.flush_interval_s,
                                             client_log=java_log, client="java", classpath=java.classpath)
                    target = run_group_consumer
                elif client == "java":
                    spec = JavaConsumerSpec(index, f"jc{i}", boot, cfg.topic, partitions, journal, java.classpath,
                                            group_id=group, flush_interval_s=cfg.flush_interval_s, client_log=java_log)
                    target = run_java_consumer
                elif cfg.consumer_mode == "subscribe":
                    spec = GroupConsumerSpec(index, f"c{i}", boot, cfg.topic, journal, group, commit=cfg.commit,
                                             rejoin_s=cfg.rejoin_s, flush_interval_s=cfg.flush_interval_s,
                                             client_log=client_log)
                    target = run_group_consumer
                else:
                    spec = ConsumerSpec(index, f"c{i}", boot, cfg.topic, partitions, journal, mode=cfg.consumer_mode,
                                        group_id=group, flush_interval_s=cfg.flush_interval_s, client_log=client_log)
                    target = run_consumer
                waves[client == "java"].append((target, spec, self._stop_consumers, self._read_counters,
                                                self._consumers, f"consumer-{spec.name}"))
        for i, profile in enumerate(cfg.producers):
            if profile.client == "java":
                spec = JavaProducerSpec(i, profile, boot, cfg.topic, partitions, journal, java.classpath,
                                        flush_interval_s=cfg.flush_interval_s,
                                        stop_timeout_s=cfg.producer_stop_timeout_s, client_log=java_log, go_file=go)
                target = run_java_producer
            else:
                spec = ProducerSpec(i, profile, boot, cfg.topic, partitions, journal,
                                    flush_interval_s=cfg.flush_interval_s, stop_timeout_s=cfg.producer_stop_timeout_s,
                                    client_log=client_log)
                target = run_txn_producer if profile.transactional else run_producer
            waves[profile.client == "java"].append((target, spec, self._stop_producers, self._send_counters,
                                                    self._producers, f"producer-{profile.name}"))
        # JVMs first (their start is the slow one; their producers hold their first send until the go file), then
        # librdkafka's workers; then go: side by side, both clients start writing within a tick of each other.
        if waves[True]:
            self._wait_started([self._spawn(*w) for w in waves[True]],
                               max(cfg.start_timeout_s, cfg.java_start_timeout_s))
        slow = any(p.transactional for p in cfg.producers)     # init_transactions may create __transaction_state
        self._wait_started([self._spawn(*w) for w in waves[False]],
                           max(cfg.start_timeout_s, cfg.java_start_timeout_s) if slow else cfg.start_timeout_s)
        Path(go).touch()
        self._last = (time.monotonic(), 0)

    def _java_client(self) -> JavaClient | None:
        """The compiled Java client, when any worker uses it (compiled now if the caller did not)."""
        cfg = self.config
        if "java" not in cfg.consumer_clients and all(p.client != "java" for p in cfg.producers):
            return None
        if cfg.java is None:
            from kafka_chaos.workloads.java_client import build

            cfg.java = build(self.cluster.version)
        (self.history.dir / "logs").mkdir(parents=True, exist_ok=True)
        return cfg.java

    def _clients_meta(self, java: JavaClient | None) -> dict:
        """meta.json's `clients`: each client library the workload used, by name, with its version."""
        used = {p.client for p in self.config.producers} | set(self.config.consumer_clients if self.config.consumers
                                                                  else ())
        out = {}
        if "librdkafka" in used:
            import confluent_kafka

            out["librdkafka"] = {"library": "librdkafka", "version": confluent_kafka.libversion()[0],
                                 "binding": f"confluent-kafka {confluent_kafka.version()[0]}"}
        if java is not None:
            out["java"] = java.meta()
        return out

    def _wait_started(self, ready: list, timeout_s: float) -> None:
        """Each worker sets its event once its client exists; one that exits first, or a start slower than
        `timeout_s`, aborts the workload."""
        def started() -> bool:
            dead = [proc for event, proc in ready if not event.is_set() and not proc.is_alive()]
            if dead:
                raise WaitTimeout(f"workload process {dead[0].name} did not start (exit code {dead[0].exitcode})")
            return all(event.is_set() for event, _ in ready)

        try:
            wait_until(started, timeout_s, lambda: "workload processes did not start within "
                       f"{timeout_s:g} s: {', '.join(p.name for e, p in ready if not e.is_set())}", interval=0.2)
        except WaitTimeout as e:
            self._abort()
            raise WorkerFailed(e.cause, "see its error output above") from e

    def _spawn(self, target, spec, stop_event, counters, into: list, name: str):
        ready = self._ctx.Event()
        proc = self._ctx.Process(target=target, args=(spec, stop_event, ready, counters, os.getpid()),
                                 name=name, daemon=False)
        proc.start()
        into.append(proc)
        if isinstance(spec, GroupConsumerSpec):
            self.members[spec.name] = (spec, proc)
        return ready, proc

    # ---- group members as the consumer-kill fault sees them (workloads/members.py) ----------------------------
    def group_members(self):
        """The consumer-group members a fault may kill and replace (None unless subscribe mode)."""
        if self.config.consumer_mode != "subscribe" or not self.config.consumers:
            return None
        from kafka_chaos.workloads.members import GroupMembers

        return GroupMembers(self)

    def spawn_member(self, target, spec):
        return self._spawn(target, spec, self._stop_consumers, self._read_counters, self._consumers,
                           f"consumer-{spec.name}")

    def retire(self, proc, index: int) -> None:
        """A killed member's process leaves the workload; its reads stay counted."""
        if proc in self._consumers:
            self._consumers.remove(proc)
        self._retired_reads += self._read_counters[index]
        self._read_counters[index] = 0

    def stop(self) -> None:
        """Producers flush, purge, flush and exit (every send gets its outcome); then consumers stop."""
        self._stop_producers.set()
        slowest = max(p.delivery_timeout_ms for p in self.config.producers) / 1000
        stop_timeout = self.config.producer_stop_timeout_s
        self._join(self._producers, (slowest if stop_timeout is None else stop_timeout) + 25)
        self._stop_consumers.set()
        self._join(self._consumers, 30)
        if self._sampler:
            self._sampler.stop()
        self.history.update_meta(end_ns=time.time_ns())

    def _join(self, procs: list, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for p in procs:
            p.join(max(0.1, deadline - time.monotonic()))
            if p.is_alive():
                log.warning("%s did not exit in %.0f s: terminating it", p.name, timeout)
                p.terminate()
                p.join(5)
            if p.exitcode not in (0, None):
                log.warning("%s exited with code %s", p.name, p.exitcode)

    def _abort(self) -> None:
        self._stop_producers.set()
        self._stop_consumers.set()
        for p in self._producers + self._consumers:
            p.join(5)
            if p.is_alive():
                p.kill()
        if self._sampler:
            self._sampler.stop()

    def final_drain(self) -> DrainResult:
        """Once the cluster is healthy (bounded wait), read every partition to its end as consumer `final`."""
        self.drain_result = final_drain(self.cluster, self.config.topic, self.history.journal_dir,
                                        healthy_timeout_s=self.config.healthy_timeout_s,
                                        read_timeout_s=self.config.drain_timeout_s, client_log=self.client_log,
                                        lso_wait_s=self.drain_lso_wait_s(), name_open=self._name_open)
        return self.drain_result

    def drain_lso_wait_s(self) -> float | None:
        """How long the drain waits on a last stable offset below the high watermark (None: its read timeout)."""
        return None

    def _name_open(self, partitions: list[int]) -> dict[int, list[dict]]:
        """The producers the brokers name as holding a transaction open on these partitions (DescribeProducers
        through the Java client's Admin; nothing where it cannot be built or asked)."""
        from kafka_chaos.workloads.java_client import build, open_transactions
        try:
            java = self.config.java or build(self.cluster.version)
        except HarnessError as e:
            log.warning("open transactions not asked: %s", e)
            return {}
        return open_transactions(java, self.cluster.bootstrap_servers, self.config.topic, partitions)

    def finalize(self) -> HistorySummary:
        return self.history.finalize()

    def worker_pids(self) -> dict[str, int]:
        """Process name -> pid of every workload process (for tests and for the runner's diagnostics)."""
        return {p.name: p.pid for p in self._producers + self._consumers}

    # ---- live display --------------------------------------------------------------------------------------
    def stats(self) -> LiveStats:
        c, n = self._send_counters, len(self.config.producers)
        sums = [sum(c[i * COUNTER_SLOTS + k] for i in range(n)) for k in (INVOKED, SENT_OK, SENT_FAIL, SENT_INFO)]
        return self._live_stats(sums, sum(self._read_counters[:self._n_consumers]) + self._retired_reads)

    def _live_stats(self, sums: list[int], reads: int) -> LiveStats:
        """The display's line from (invoked, ok, fail, info) sums: the send rate since the last call, elapsed time."""
        now = time.monotonic()
        last_t, last_sends = self._last
        rate = (sums[0] - last_sends) / (now - last_t) if now > last_t else 0.0
        self._last = (now, sums[0])
        elapsed = (time.time_ns() - self._started_ns) / 1e9 if self._started_ns else 0.0
        alive = sum(p.is_alive() for p in self._producers + self._consumers)
        return LiveStats(sends=sums[0], ok=sums[1], fail=sums[2], info=sums[3], reads=reads, sends_per_s=rate,
                         elapsed_s=elapsed, workers_alive=alive)
