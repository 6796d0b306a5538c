"""The cluster options `cluster up` and `run` share: one function adds them, `ClusterChoice` carries what was given.

Every option defaults to None (not given), so each command keeps its own defaults (a chaos run detects faults
faster than a plain `cluster up`) and a `--broker-config` entry that contradicts an explicit flag can be refused.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace

from kafka_chaos.base.errors import UsageError
from kafka_chaos.cluster.config import ClusterConfig
from kafka_chaos.cluster.settings import parse_settings, with_broker_settings

# ClusterChoice attribute -> (ClusterConfig field, flag)
_FIELDS = {
    "brokers": ("brokers", "--brokers"),
    "controllers": ("controllers", "--controllers"),
    "image": ("image", "--image"),
    "subnet": ("subnet", "--subnet"),
    "elr": ("elr", "--elr"),
    "transaction_version": ("transaction_version", "--transaction-version"),
    "metadata": ("metadata", "--metadata"),
    "replica_lag_ms": ("replica_lag_time_max_ms", "--replica-lag-ms"),
    "session_timeout_ms": ("broker_session_timeout_ms", "--session-timeout-ms"),
    "power_loss_fs": ("power_loss_fs", "--power-loss-fs"),
    "link_proxy": ("link_proxy", "--link-proxy"),
}


def add_cluster_options(p: argparse.ArgumentParser, defaults: ClusterConfig) -> None:
    """The options of `cluster up` and `run`; `defaults` is the command's cluster, shown in the help."""
    d = defaults
    p.add_argument("--kafka-version", metavar="V", help="Kafka release (default: newest 4.x on Maven Central); "
                   "`run` also takes a list, e.g. 2.8.2,3.9.2:zookeeper,4.4.0: the same scenario and seed on each")
    p.add_argument("--brokers", type=int, help=f"number of brokers (default {d.brokers})")
    p.add_argument("--controllers", type=int, choices=(1, 3, 5),
                   help=f"dedicated KRaft controllers (default {d.controllers})")
    p.add_argument("--image", help="use this image instead of building one (e.g. apache/kafka:4.3.1)")
    p.add_argument("--subnet", help="the cluster network's subnet (default: a free /24 in 172.29.0.0/16)")
    p.add_argument("--min-isr", type=int, help=f"min.insync.replicas (default {d.min_insync_replicas})")
    p.add_argument("--unclean", action=argparse.BooleanOptionalAction, default=None,
                   help="unclean.leader.election.enable (default off)")
    p.add_argument("--metadata", choices=("kraft", "zookeeper"),
                   help="metadata mode: kraft (default where the release has it, 3.9+) or zookeeper (up to 3.9: one "
                        "ZooKeeper node, one broker elected controller)")
    p.add_argument("--elr", action=argparse.BooleanOptionalAction, default=None,
                   help="eligible leader replicas (4.0+; default: the version's default)")
    p.add_argument("--transaction-version", type=int, choices=(0, 1, 2),
                   help="the transaction.version feature the cluster is formatted with (4.0+; 2: KIP-890's "
                        "server-side defence, an epoch bump per transaction; default: the release's)")
    p.add_argument("--replica-lag-ms", type=int, help=f"replica.lag.time.max.ms (default {d.replica_lag_time_max_ms})")
    p.add_argument("--session-timeout-ms", type=int,
                   help=f"broker.session.timeout.ms (default {d.broker_session_timeout_ms}); in ZooKeeper mode "
                        "zookeeper.session.timeout.ms (Kafka's default 18000 from 2.5)")
    p.add_argument("--power-loss-fs", action=argparse.BooleanOptionalAction, default=None,
                   help="each broker's log dir on a FUSE layer that keeps unsynced writes apart, so a power loss "
                        "drops them (a power-loss scenario turns it on itself)")
    p.add_argument("--link-proxy", action=argparse.BooleanOptionalAction, default=None,
                   help="the clients' and the brokers' replication links through a Toxiproxy, so link faults can "
                        "slow them without tc netem (a link scenario turns it on itself)")
    p.add_argument("--flush-every-write", action="store_true", default=None,
                   help="log.flush.interval.messages=1: Kafka fsyncs every write before acknowledging it")
    p.add_argument("--broker-config", action="append", metavar="KEY=VALUE",
                   help="any broker setting, on every node (repeatable), e.g. log.flush.interval.messages=1")
    p.add_argument("--topic-config", action="append", metavar="KEY=VALUE",
                   help="any topic setting for the chaos topic (repeatable; overrides the broker's, as in Kafka; "
                        "on `cluster up`: for every run's topic, under the run's own), e.g. flush.messages=1")


def explicit_flags(min_isr: int | None, unclean: bool | None) -> dict[str, tuple[object, str]]:
    """--min-isr and --unclean when given, in the form ClusterChoice.apply takes them."""
    out: dict[str, tuple[object, str]] = {}
    if min_isr is not None:
        out["min_insync_replicas"] = (min_isr, f"--min-isr {min_isr}")
    if unclean is not None:
        out["unclean_leader_election"] = (unclean, "--unclean" if unclean else "--no-unclean")
    return out


@dataclass
class ClusterChoice:
    """What the command line said about the cluster; None: not given, the command's default applies."""

    brokers: int | None = None
    controllers: int | None = None
    image: str | None = None
    subnet: str | None = None
    elr: bool | None = None
    transaction_version: int | None = None
    metadata: str | None = None
    replica_lag_ms: int | None = None
    session_timeout_ms: int | None = None
    power_loss_fs: bool | None = None
    link_proxy: bool | None = None
    flush_every_write: bool | None = None
    broker_config: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "ClusterChoice":
        return cls(**{a: getattr(args, a) for a in _FIELDS}, flush_every_write=getattr(args, "flush_every_write", None),
                   broker_config=parse_settings(args.broker_config, "--broker-config"))

    def _given(self) -> dict[str, tuple[str, object, str]]:
        """ClusterConfig field -> (attribute, value, the flag as typed)."""
        out = {}
        for attr, (name, flag) in _FIELDS.items():
            v = getattr(self, attr)
            if v is not None:
                out[name] = (attr, v, (flag if v else f"--no-{flag[2:]}") if isinstance(v, bool) else f"{flag} {v}")
        if self.flush_every_write:
            out["log_flush_interval_messages"] = ("flush_every_write", 1, "--flush-every-write")
        return out

    def apply(self, base: ClusterConfig, explicit: dict[str, tuple[object, str]] | None = None) -> ClusterConfig:
        """`base` with the given options and broker settings; `explicit`: further fields set by a flag of the
        command's own (run's --min-isr), as field -> (value, flag as typed)."""
        given = {name: (v, flag) for name, (_, v, flag) in self._given().items()} | (explicit or {})
        config = replace(base, **{name: v for name, (v, _) in given.items()})
        if self.session_timeout_ms is not None:       # the broker's session, whichever mode keeps it
            config = replace(config, zookeeper_session_timeout_ms=self.session_timeout_ms)
        config = with_broker_settings(config, self.broker_config, {name: flag for name, (_, flag) in given.items()})
        config.validate()
        return config

    def argv(self) -> list[str]:
        """The options as a command line (for the command that reproduces a run)."""
        out = []
        for _, _, flag in self._given().values():
            out += flag.split(" ", 1)
        for k, v in self.broker_config.items():
            out += ["--broker-config", f"{k}={v}"]
        return out

    def check_matches(self, running: ClusterConfig) -> None:
        """A reused cluster must already be what was asked for: settings are fixed when nodes start."""
        wanted = self.apply(replace(running, extra_settings={}))
        for key, value in wanted.broker_settings().items():
            have = running.broker_settings().get(key)
            if have != value:
                raise UsageError(f"the running cluster '{running.name}' has {key}={have}, not {value}",
                                 "drop --reuse-cluster (a new cluster gets the settings), or remove it with "
                                 f"`kafka-chaos cluster down --name {running.name}` and start it with them")
        for name, (_, v, flag) in self._given().items():
            if getattr(running, name) != v:
                raise UsageError(f"the running cluster '{running.name}' was not started with {flag}",
                                 f"drop {flag.split()[0]} or --reuse-cluster")
