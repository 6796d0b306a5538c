"""meta.json as code: what a run was (scenario, settings, nodes, producers, times, drain), written and read here.

RunMeta is the dataclass both sides use: the runner builds one and HistoryWriter writes `to_dict()`; `load_meta`
reads it back strictly for the checker (exit 2 on a bad file), filling in Kafka's defaults for the run's version;
`read_meta_dict` reads it leniently for the report, which also draws runs whose meta.json is partial.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kafka_chaos.base.errors import HarnessError
from kafka_chaos.base.versions import ELR_DEFAULT_FROM, NEWEST_KNOWN_KAFKA
from kafka_chaos.base.versions import version_tuple as base_version_tuple
from kafka_chaos.history.layout import META_FILE
from kafka_chaos.history.schema import META_REQUIRED


class HistoryError(HarnessError):
    """A results directory that does not follow docs/history.md."""

    def __init__(self, cause: str):
        super().__init__(cause, "fix or regenerate the file (docs/history.md is the format; "
                                "`kafka-chaos history repair DIR` rebuilds Parquet files from the journal)")


def version_tuple(version: str) -> tuple[int, ...]:
    try:
        return base_version_tuple(version)
    except ValueError:
        raise HistoryError(f"meta.json: kafka_version {version!r} is not a version like 4.1.0") from None


@dataclass(frozen=True)
class RunMeta:
    """meta.json with Kafka's defaults filled in for the run's version where a key is absent."""

    run_id: str
    partitions: int
    replication_factor: int
    min_insync_replicas: int
    kafka_version: str = NEWEST_KNOWN_KAFKA
    topic: str = "chaos"
    unclean_leader_election: bool = False
    elr_enabled: bool = True
    consumer_mode: str = "assign"
    producers: tuple[dict, ...] = ()
    broker_settings: dict = field(default_factory=dict)   # broker settings that differ from Kafka's defaults
    topic_settings: dict = field(default_factory=dict)    # the configs the topic was created with (they win)
    scenario: str | None = None
    seed: int | None = None
    command: str | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    brokers: tuple[int, ...] = ()        # empty: 1..replication_factor
    controllers: tuple[int, ...] = ()    # empty: combined mode, the brokers vote
    metadata_mode: str = "kraft"         # kraft | zookeeper (a broker is the controller, elected through ZooKeeper)
    zookeeper: tuple[int, ...] = ()      # ZooKeeper node ids (ZooKeeper mode)
    drain: dict | None = None            # the final drain's record; None: not recorded (an old or cut-short run)
    interrupted: str | None = None       # why the run was cut short, if it was
    duration_s: float | None = None
    fault_plan: tuple[dict, ...] = ()    # the schedule's steps: start_s, fault, heal_s
    extra: dict = field(default_factory=dict)    # further keys, written as they are (e.g. a plugin's test id)

    def to_dict(self) -> dict:
        """meta.json's object: every field that is set, the `extra` keys beside them."""
        out = {k: v for k, v in asdict(self).items() if k != "extra" and v not in (None, (), {})}
        for k in ("producers", "brokers", "controllers", "zookeeper", "fault_plan"):
            if k in out:
                out[k] = list(out[k])
        return out | dict(self.extra)

    def broker_ms(self, name: str, default: int) -> int:
        return int(self.broker_settings.get(name, default))

    def setting(self, topic_key: str, *broker_keys: str) -> str | None:
        """A log setting as the topic sees it: its own config, else the first broker synonym set, else None (Kafka's
        default). Kafka resolves a topic config the same way (ServerTopicConfigSynonyms, LogConfig)."""
        if topic_key in self.topic_settings:
            return str(self.topic_settings[topic_key])
        return next((str(self.broker_settings[k]) for k in broker_keys if k in self.broker_settings), None)

    @property
    def flush_interval_messages(self) -> int | None:
        """flush.messages (broker: log.flush.interval.messages); None: Kafka's default, never by count."""
        v = self.setting("flush.messages", "log.flush.interval.messages")
        return None if v is None else int(v)

    @property
    def flush_interval_ms(self) -> int | None:
        """flush.ms (broker: log.flush.interval.ms, else log.flush.scheduler.interval.ms); None: never by time."""
        v = self.setting("flush.ms", "log.flush.interval.ms", "log.flush.scheduler.interval.ms")
        return None if v is None else int(v)

    @property
    def flush_check_ms(self) -> int | None:
        """log.flush.scheduler.interval.ms: how often the flusher looks at flush.ms; None: never (the default)."""
        v = self.broker_settings.get("log.flush.scheduler.interval.ms")
        return None if v is None else int(v)

    @property
    def replica_lag_time_max_ms(self) -> int:
        return self.broker_ms("replica.lag.time.max.ms", 30_000 if version_tuple(self.kafka_version) >= (2, 5)
                              else 10_000)

    @property
    def request_timeout_ms(self) -> int:
        """request.timeout.ms of the brokers: how long a replica fetcher waits for an answer before it drops the
        connection (checkers/model, `_Sim.fetch_stuck_until`)."""
        return self.broker_ms("request.timeout.ms", 30_000)

    @property
    def broker_session_timeout_ms(self) -> int:
        """The session whose expiry fences a broker: with the KRaft controller, or in ZooKeeper mode with ZooKeeper
        (zookeeper.session.timeout.ms: 18 s from 2.5, KIP-537; 6 s before)."""
        if self.metadata_mode == "zookeeper":
            return self.broker_ms("zookeeper.session.timeout.ms",
                                  18_000 if version_tuple(self.kafka_version) >= (2, 5) else 6_000)
        return self.broker_ms("broker.session.timeout.ms", 9_000)


def load_meta(run_dir: Path) -> RunMeta:
    path = Path(run_dir) / META_FILE
    raw = read_meta_dict(run_dir)
    if raw is None:
        raise HistoryError(f"{path}: missing (every results directory has a meta.json)")
    for key, typ in META_REQUIRED.items():
        if key not in raw:
            raise HistoryError(f"{path}: required key {key!r} is missing")
        if not isinstance(raw[key], typ) or isinstance(raw[key], bool):
            raise HistoryError(f"{path}: key {key!r} must be {typ.__name__}, got {raw[key]!r}")
    version = str(raw.get("kafka_version") or NEWEST_KNOWN_KAFKA)
    mode = raw.get("consumer_mode") or "assign"
    if mode not in ("assign", "subscribe"):
        raise HistoryError(f"{path}: consumer_mode must be 'assign' or 'subscribe', got {mode!r}")
    settings = _settings(raw, "broker_settings", path)
    topic_settings = _settings(raw, "topic_settings", path)
    unclean = _unclean(raw, settings, topic_settings, path)
    elr = raw.get("elr_enabled")
    brokers, controllers = _node_ids(raw, "brokers", path), _node_ids(raw, "controllers", path)
    metadata_mode = raw.get("metadata_mode") or "kraft"
    if metadata_mode not in ("kraft", "zookeeper"):
        raise HistoryError(f"{path}: metadata_mode must be 'kraft' or 'zookeeper', got {metadata_mode!r}")
    if set(brokers) & set(controllers):
        raise HistoryError(f"{path}: node ids {sorted(set(brokers) & set(controllers))} are listed as both "
                           "brokers and dedicated controllers")
    return RunMeta(
        run_id=raw["run_id"], partitions=raw["partitions"], replication_factor=raw["replication_factor"],
        min_insync_replicas=raw["min_insync_replicas"], kafka_version=version,
        topic=raw.get("topic") or "chaos", unclean_leader_election=bool(unclean),
        elr_enabled=bool(elr) if elr is not None else (version_tuple(version) >= ELR_DEFAULT_FROM
                                                        and metadata_mode == "kraft"),
        consumer_mode=mode, producers=tuple(raw.get("producers") or ()), broker_settings=settings,
        topic_settings=topic_settings,
        scenario=raw.get("scenario"), seed=raw.get("seed"), command=raw.get("command"),
        start_ns=raw.get("start_ns"), end_ns=raw.get("end_ns"), brokers=brokers, controllers=controllers,
        metadata_mode=metadata_mode, zookeeper=_node_ids(raw, "zookeeper", path),
        drain=_drain(raw, path), interrupted=raw.get("interrupted") or None, duration_s=raw.get("duration_s"),
        fault_plan=tuple(raw.get("fault_plan") or ()),
        extra={k: v for k, v in raw.items() if k not in _FIELDS})


_FIELDS = set(RunMeta.__dataclass_fields__)


def _settings(raw: dict, key: str, path: Path) -> dict:
    settings = raw.get(key) or {}
    if not isinstance(settings, dict):
        raise HistoryError(f"{path}: key {key!r} must be an object of Kafka settings, got {settings!r}")
    settings = {str(k): v for k, v in settings.items()}
    if key == "topic_settings" and "min.insync.replicas" in settings \
            and str(settings["min.insync.replicas"]) != str(raw["min_insync_replicas"]):
        raise HistoryError(f"{path}: topic_settings' min.insync.replicas {settings['min.insync.replicas']} "
                           f"disagrees with min_insync_replicas {raw['min_insync_replicas']}")
    return settings


def _unclean(raw: dict, broker: dict, topic: dict, path: Path) -> bool:
    """unclean_leader_election, else the topic's setting, else the broker's (a topic setting wins, as in Kafka)."""
    def flag(v) -> bool:
        return str(v).lower() == "true"
    key = "unclean.leader.election.enable"
    recorded = raw.get("unclean_leader_election")
    if recorded is not None and key in topic and flag(topic[key]) != bool(recorded):
        raise HistoryError(f"{path}: topic_settings' {key} {topic[key]} disagrees with unclean_leader_election "
                           f"{recorded}")
    if recorded is not None:
        return bool(recorded)
    return flag(topic.get(key, broker.get(key, "false")))


def _drain(raw: dict, path: Path) -> dict | None:
    drain = raw.get("drain")
    if drain is None:
        return None
    if not isinstance(drain, dict) or not isinstance(drain.get("incomplete", []), list):
        raise HistoryError(f"{path}: key 'drain' must be an object with an 'incomplete' list, got {drain!r}")
    return drain


def _node_ids(raw: dict, key: str, path: Path) -> tuple[int, ...]:
    ids = raw.get(key) or []
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise HistoryError(f"{path}: key {key!r} must be a list of node ids (ints), got {ids!r}")
    return tuple(ids)


def read_meta_dict(run_dir: Path | str) -> dict | None:
    """meta.json as a plain object for readers that tolerate a partial file (the report); None if absent.
    HistoryError if it is there but not a JSON object."""
    path = Path(run_dir) / META_FILE
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise HistoryError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(raw, dict):
        raise HistoryError(f"{path}: must hold a JSON object")
    return raw
