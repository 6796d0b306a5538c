"""What decides a chaos run: `RunOptions` (Jepsen's test map as a frozen dataclass), and `command()`, the exact
`kafka-chaos run ...` line that reproduces it (the same seed gives the same schedule).

`resolved()` is the one place a run's settings are defaulted and validated, before any container starts; it returns
the run spec everything else reads: its cluster part (`cluster_config`, `topic_settings`), its workload part
(`profiles`, consumers, client) and its check part (`check_settings`, engine). A spec changed with
dataclasses.replace is validated again when resolved.
"""
from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafka_chaos.base.errors import UsageError
from kafka_chaos.checkers.check import CheckSettings
from kafka_chaos.cluster.config import ClusterConfig
from kafka_chaos.cluster.settings import BROKER_FIELDS, check_topic_settings, conflict, typed
from kafka_chaos.harness import scenarios
from kafka_chaos.harness.cluster_options import ClusterChoice
from kafka_chaos.history.schema import ACKS_CHOICES, acks_level
from kafka_chaos.workloads.profile import CLIENTS, ProducerProfile

DEFAULT_RESULTS = Path("results")
DEFAULT_MIN_ISR = 2      # a chaos run's min.insync.replicas unless a flag or setting says otherwise (Kafka's is 1)
CLIENT_CHOICES = CLIENTS + ("both",)      # --client: librdkafka, java, or both side by side
PRODUCER_NAMES = {"librdkafka": "p0", "java": "j0"}
WORKLOADS = ("produce", "eos")           # --workload


def chaos_cluster_config(name: str, kafka_version: str | None = None, **overrides) -> ClusterConfig:
    """The cluster chaos runs use: fast fault detection (6 s session, 5 s ISR lag) so short runs see effects. In
    ZooKeeper mode the session is ZooKeeper's: 6 s is Kafka's default before 2.5 (KIP-537 made it 18 s)."""
    base = dict(name=name, kafka_version=kafka_version, brokers=3, controllers=1, min_insync_replicas=DEFAULT_MIN_ISR,
                replica_lag_time_max_ms=5000, broker_session_timeout_ms=6000, broker_heartbeat_interval_ms=1000,
                zookeeper_session_timeout_ms=6000)
    base.update(overrides)
    return ClusterConfig(**base)


@dataclass(frozen=True)
class RunOptions:
    scenario: str
    acks: str = "all"                        # a spelling of history.schema.ACKS_CHOICES; resolved: a level
    min_isr: int | None = None               # None: --topic-config's, else --broker-config's, else DEFAULT_MIN_ISR
    idempotence: bool | None = None          # None: on for acks=all (the Java client's default), else off
    unclean: bool | None = None              # None: --topic-config's, else --broker-config's, else off
    kafka_version: str | None = None
    duration_s: float | None = None          # None: the scenario's default
    rate: float | None = 2000.0              # sends per second (None: as fast as possible)
    seed: int | None = None                  # None: drawn from the clock, then recorded
    results: Path = DEFAULT_RESULTS
    reuse_cluster: bool = False
    cluster_name: str = "kafka-chaos"
    keep_cluster: bool = False
    consumers: int = 1
    run_id: str | None = None
    check: bool = True
    stall_threshold_s: float = 2.0           # see checkers.check.CheckSettings
    max_stall_s: float | None = None
    live: bool | None = None                 # None: a live display on a terminal, log lines otherwise
    extra_meta: dict = field(default_factory=dict)
    cluster: ClusterChoice = field(default_factory=ClusterChoice)    # `run`'s cluster options (`cluster up`'s)
    topic_config: dict[str, str] = field(default_factory=dict)      # --topic-config KEY=VALUE
    engine: str = "spark"                                            # the checker's engine (`check --engine`)
    client: str = "librdkafka"               # --client: which client library writes (both: side by side)
    consumer_mode: str = "assign"            # --consumer-mode: assign, or subscribe (one group, commits, rebalances)
    commit: str = "manual"                   # --commit: subscribe mode's offset commits, auto or manual
    transactions: bool = False               # --transactions: a transactional producer, some aborted on purpose
    workload: str = "produce"                # --workload: produce (producers and readers) or eos (workloads/eos_run.py)
    schedule_file: Path | None = None        # --schedule FILE: these fault steps instead of the scenario's plan
    banner: str | None = None                # a line the live display shows above the run (a soak's running verdict)
    checked: bool = field(default=False, init=False, repr=False, compare=False)     # made by resolved()

    def resolved(self) -> "RunOptions":
        """This run's spec: defaults filled in and everything validated, before any container starts (once: a
        resolved spec returns itself)."""
        if self.checked:
            return self
        planned, scenario, schedule_file = self._schedule_file()
        sc = scenarios.scenario(scenario)
        try:
            acks = acks_level(self.acks)
        except ValueError:
            raise UsageError(f"--acks {self.acks}: not one of {', '.join(ACKS_CHOICES)}",
                             "use --acks 0, 1 or all") from None
        min_isr, unclean = self._settings()
        duration = self.duration_s if self.duration_s is not None else (
            planned.duration_s if planned and planned.duration_s else sc.duration_s)
        spec = replace(self, scenario=scenario, schedule_file=schedule_file, acks=acks, min_isr=min_isr,
                       unclean=unclean, idempotence=acks == "all" if self.idempotence is None else self.idempotence,
                       duration_s=duration, seed=time.time_ns() % 1_000_000 if self.seed is None else self.seed)
        spec._validate(sc)
        object.__setattr__(spec, "checked", True)
        return spec

    def _validate(self, sc) -> None:
        brokers = self.cluster_config("run").brokers     # bad cluster options or settings fail here too
        if brokers < sc.replication_factor:
            raise UsageError(f"--brokers {brokers}: {self.scenario}'s topic has {sc.replication_factor} replicas",
                             f"use --brokers {sc.replication_factor} or more")
        if not 1 <= self.min_isr <= sc.replication_factor:
            raise UsageError(f"--min-isr {self.min_isr}: must be between 1 and the replication factor "
                             f"{sc.replication_factor}", "use --min-isr 1, 2 or 3")
        if self.duration_s <= 0:
            raise UsageError(f"--duration {self.duration_s}: must be positive", "use --duration 60")
        if self.client not in CLIENT_CHOICES:
            raise UsageError(f"--client {self.client}: not one of {', '.join(CLIENT_CHOICES)}",
                             "use --client librdkafka, java or both")
        for p in self.profiles():
            p.validate()
        self.check_settings()                    # bad stall options fail before any container starts
        steps = self.plan()                      # unknown faults or impossible shapes fail here
        if self.workload not in WORKLOADS:
            raise UsageError(f"--workload {self.workload}: not one of {', '.join(WORKLOADS)}", "use produce or eos")
        if self.workload == "eos" and (self.transactions or self.consumer_mode != "assign"):
            raise UsageError("--workload eos runs processors (transactional by design) and assign-mode live "
                             "readers", "leave out --transactions and --consumer-mode")
        if self.consumer_mode != "subscribe" and self.workload != "eos" and \
                any(s.fault.name == "consumer-kill" for s in steps):
            raise UsageError(f"{self.scenario}: consumer-kill kills a consumer-group member, and this run has no "
                             "group", "add --consumer-mode subscribe")

    def _schedule_file(self):
        """(the --schedule file's plan or None, the scenario, the file's resolved path): the scenario (the topic's
        shape) defaults to the file's."""
        if self.schedule_file is None:
            return None, self.scenario, None
        from kafka_chaos.nemesis import schedule_data

        path = Path(self.schedule_file).resolve()
        planned = schedule_data.read(path)
        if self.scenario:
            return planned, self.scenario, path
        if not planned.scenario:
            raise UsageError(f"{path} names no scenario and none was given",
                             "pass the scenario whose topic shape to use: kafka-chaos run SCENARIO --schedule FILE")
        return planned, planned.scenario, path

    def plan(self):
        """The fault steps of this run: the --schedule file's, else the scenario's for this seed and duration."""
        if self.schedule_file is not None:
            from kafka_chaos.nemesis import schedule_data

            return schedule_data.read(self.schedule_file).schedule.plan(self.seed, self.duration_s)
        return scenarios.scenario(self.scenario).plan(self.seed, self.duration_s)

    def _settings(self) -> tuple[int, bool]:
        """(min ISR, unclean election) from the flags, else the topic's settings, else the broker's, else the
        defaults (a topic setting overrides the broker's, as in Kafka); a flag that contradicts a setting is
        refused."""
        topic = check_topic_settings(self.topic_config)
        return (_pick("min.insync.replicas", self.min_isr, "--min-isr", topic, self.cluster.broker_config,
                      DEFAULT_MIN_ISR),
                _pick("unclean.leader.election.enable", self.unclean, "--unclean", topic,
                      self.cluster.broker_config, False))

    def topic_settings(self, cluster_topic_settings: dict[str, str] | None = None) -> dict[str, str]:
        """The chaos topic's configs: a reused cluster's `cluster up --topic-config`, then the run's own."""
        return dict(cluster_topic_settings or {}) | self.topic_config | {
            "min.insync.replicas": str(self.min_isr), "unclean.leader.election.enable": str(self.unclean).lower()}

    def cluster_config(self, name: str) -> ClusterConfig:
        """The cluster a run starts: the chaos defaults, the scenario's shape (e.g. 4 brokers), the run's min ISR
        and unclean flag, the cluster options."""
        base = chaos_cluster_config(name, self.kafka_version, min_insync_replicas=self.min_isr,
                                    unclean_leader_election=self.unclean,
                                    **scenarios.scenario(self.scenario).cluster_overrides)
        return self.cluster.apply(base)

    def check_settings(self):

        return CheckSettings(stall_threshold_s=self.stall_threshold_s, max_stall_s=self.max_stall_s)

    def profile(self):

        return ProducerProfile(name="p0", acks=self.acks, idempotent=bool(self.idempotence), rate=self.rate)

    def clients(self) -> tuple[str, ...]:
        return CLIENTS if self.client == "both" else (self.client,)

    def profiles(self) -> list[ProducerProfile]:
        """One producer per client, all with the same profile, writing at the same time."""
        return [ProducerProfile(name=PRODUCER_NAMES[c], acks=self.acks, idempotent=bool(self.idempotence),
                                rate=self.rate, client=c, transactional=self.transactions) for c in self.clients()]

    def command(self) -> str:
        """The exact command line that reproduces this run."""
        parts = ["kafka-chaos", "run", self.scenario, "--acks", self.acks, "--min-isr", str(self.min_isr),
                 "--idempotence" if self.idempotence else "--no-idempotence",
                 "--unclean" if self.unclean else "--no-unclean",
                 "--duration", f"{self.duration_s:g}", "--seed", str(self.seed)]
        if self.kafka_version:
            parts += ["--kafka-version", self.kafka_version]
        parts += ["--rate", f"{self.rate:g}" if self.rate else "0"]
        if self.stall_threshold_s != 2.0:
            parts += ["--stall-threshold", f"{self.stall_threshold_s:g}"]
        if self.max_stall_s is not None:
            parts += ["--max-stall", f"{self.max_stall_s:g}"]
        parts += self.cluster.argv()
        for k, v in self.topic_config.items():
            parts += ["--topic-config", f"{k}={v}"]
        if self.engine != "spark":
            parts += ["--engine", self.engine]
        if self.client != "librdkafka":
            parts += ["--client", self.client]
        if self.transactions:
            parts += ["--transactions"]
        if self.workload != "produce":
            parts += ["--workload", self.workload]
        if self.consumer_mode != "assign":
            parts += ["--consumer-mode", self.consumer_mode, "--commit", self.commit, "--consumers",
                      str(self.consumers)]
        if self.schedule_file is not None:
            parts += ["--schedule", str(self.schedule_file)]
        return shlex.join(parts)

    def default_run_id(self) -> str:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        return f"{stamp}-{self.scenario}-acks{self.acks}-isr{self.min_isr}-s{self.seed}"


def _pick(key: str, flag_value, flag: str, topic: dict, broker: dict[str, str], default):
    """One setting from, in order: its flag, the topic's setting, the broker's, the default."""
    shown = (flag if flag_value else f"--no-{flag[2:]}") if isinstance(flag_value, bool) else f"{flag} {flag_value}"
    from_broker = typed(key, broker[key], BROKER_FIELDS[key][1], "--broker-config") if key in broker else None
    if flag_value is not None:
        for value, source in ((topic.get(key), "--topic-config"), (from_broker, "--broker-config")):
            if value is not None and value != flag_value:
                raise conflict(key, value, shown, source)
        return flag_value
    for value in (topic.get(key), from_broker):
        if value is not None:
            return value
    return default
