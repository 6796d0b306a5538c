"""A user's own Kafka settings (`--broker-config` / `--topic-config KEY=VALUE`): parsed, checked, merged.

Any well-formed key is passed to Kafka as it is (Kafka itself rejects a setting it does not know, and names it);
keys kafka-chaos sets itself (listeners, node ids, log dirs) are refused, and the settings the harness and the ISR
model read are type-checked here and land in ClusterConfig's own fields, so meta.json and the model see them.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterable

from kafka_chaos.base.errors import UsageError
from kafka_chaos.cluster.config import ClusterConfig

# Kafka's config names: lower-case words joined by '.', '-' or '_' (e.g. replica.lag.time.max.ms).
_KEY = re.compile(r"[a-z][a-z0-9]*(?:[._-][a-z0-9]+)*")

# Broker settings with a field of their own in ClusterConfig: (field, type).
BROKER_FIELDS: dict[str, tuple[str, type]] = {
    "min.insync.replicas": ("min_insync_replicas", int),
    "unclean.leader.election.enable": ("unclean_leader_election", bool),
    "replica.lag.time.max.ms": ("replica_lag_time_max_ms", int),
    "broker.session.timeout.ms": ("broker_session_timeout_ms", int),
    "broker.heartbeat.interval.ms": ("broker_heartbeat_interval_ms", int),
    "log.flush.interval.messages": ("log_flush_interval_messages", int),
    "log.flush.interval.ms": ("log_flush_interval_ms", int),
    "zookeeper.session.timeout.ms": ("zookeeper_session_timeout_ms", int),
}
# Topic settings the run or the model reads, with their types.
TOPIC_TYPES: dict[str, type] = {"min.insync.replicas": int, "unclean.leader.election.enable": bool,
                                "flush.messages": int, "flush.ms": int}
# What kafka-chaos sets on every node itself: overriding these would break the cluster, not configure it.
RESERVED = {"process.roles", "node.id", "broker.id", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
            "listeners", "advertised.listeners", "inter.broker.listener.name", "controller.listener.names",
            "listener.security.protocol.map", "log.dirs", "log.dir", "zookeeper.connect"}


def parse_settings(pairs: Iterable[str] | None, flag: str) -> dict[str, str]:
    """['k=v', ...] -> {k: v}; UsageError naming the pair and the fix for anything malformed."""
    out: dict[str, str] = {}
    for pair in pairs or ():
        key, eq, value = str(pair).partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            raise UsageError(f"{flag} {pair!r}: not KEY=VALUE (no '=')", f"write it as {flag} {key or 'KEY'}=VALUE, "
                             f"e.g. {flag} replica.lag.time.max.ms=5000")
        if not _KEY.fullmatch(key):
            raise UsageError(f"{flag} {pair!r}: {key!r} is not a Kafka config name (lower-case words joined by '.', "
                             "e.g. min.insync.replicas)", "check the spelling against Kafka's configuration docs")
        if not value:
            raise UsageError(f"{flag} {pair!r}: no value after '='", f"give one, e.g. {flag} {key}=VALUE")
        if key in RESERVED:
            raise UsageError(f"{flag} {key}: kafka-chaos sets this itself on every node", "leave it out")
        if out.get(key, value) != value:
            raise UsageError(f"{flag} {key} given twice ({out[key]!r} and {value!r})", "give it once")
        out[key] = value
    return out


def typed(key: str, value: str, typ: type, flag: str):
    """A setting's value as the type the harness and the model read it; UsageError if it is not one."""
    if typ is bool:
        if value.lower() not in ("true", "false"):
            raise UsageError(f"{flag} {key}={value}: must be true or false", f"use {flag} {key}=true or =false")
        return value.lower() == "true"
    try:
        number = int(value)
    except ValueError:
        raise UsageError(f"{flag} {key}={value}: must be a whole number", f"e.g. {flag} {key}=5000") from None
    if number < (0 if key.endswith(".ms") else 1):
        least = "a non-negative" if key.endswith(".ms") else "a positive"
        raise UsageError(f"{flag} {key}={value}: out of range", f"give {least} number")
    return number


def check_topic_settings(settings: dict[str, str]) -> dict[str, object]:
    """The typed topic settings the run reads ({} for none); UsageError on a bad value."""
    return {k: typed(k, v, TOPIC_TYPES[k], "--topic-config") for k, v in settings.items() if k in TOPIC_TYPES}


def conflict(key: str, value: object, flag: str, config_flag: str) -> UsageError:
    """`flag`: the explicit option as given, e.g. '--min-isr 1' or '--no-unclean'."""
    shown = str(value).lower() if isinstance(value, bool) else value
    return UsageError(f"{config_flag} {key}={shown} conflicts with {flag}",
                      f"give the setting once: drop {flag.split()[0]} or the {config_flag} {key} entry")


def with_broker_settings(config: ClusterConfig, settings: dict[str, str], explicit: dict[str, str]) -> ClusterConfig:
    """`config` with the user's broker settings applied: known ones into their fields, the rest as they are.

    `explicit`: field -> the flag that set it on the command line ('--min-isr 1'); a setting that disagrees with
    one is a UsageError, since which of the two was meant cannot be guessed.
    """
    changes: dict[str, object] = {}
    extra = dict(config.extra_settings)
    for key, value in settings.items():
        if key not in BROKER_FIELDS:
            extra[key] = value
            continue
        name, typ = BROKER_FIELDS[key]
        v = typed(key, value, typ, "--broker-config")
        if name in explicit and getattr(config, name) != v:
            raise conflict(key, v, explicit[name], "--broker-config")
        changes[name] = v
    return replace(config, extra_settings=extra, **changes)
