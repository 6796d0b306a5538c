"""Load a results directory and check it against the documented history format before any analysis.

Schema checks read only Parquet footers, so they are cheap even for 100M-row files; a bad file fails fast with
exit 2, naming the file and the column, instead of failing deep inside a Spark job.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from base.errors import HarnessError
from history.schema import HISTORY_FILES, META_REQUIRED

NEWEST_KNOWN_KAFKA = "4.4.0"


class HistoryError(HarnessError):
    """A results directory that does not follow docs/history.md."""

    def __init__(self, cause: str):
        super().__init__(cause, "fix or regenerate the file (docs/history.md is the format; "
                                "`kafka-chaos history repair DIR` rebuilds Parquet files from the journal)")


def version_tuple(version: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in version.split("-")[0].split(".")[:3])
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
    broker_settings: dict = field(default_factory=dict)
    scenario: str | None = None
    seed: int | None = None
    command: str | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    brokers: tuple[int, ...] = ()        # empty: 1..replication_factor
    controllers: tuple[int, ...] = ()    # empty: combined mode, the brokers vote
    drain: dict | None = None            # the final drain's record; None: not recorded (an old or cut-short run)
    interrupted: str | None = None       # why the run was cut short, if it was

    def broker_ms(self, name: str, default: int) -> int:
        return int(self.broker_settings.get(name, default))

    @property
    def replica_lag_time_max_ms(self) -> int:
        return self.broker_ms("replica.lag.time.max.ms", 30_000 if version_tuple(self.kafka_version) >= (2, 5)
                              else 10_000)

    @property
    def broker_session_timeout_ms(self) -> int:
        return self.broker_ms("broker.session.timeout.ms", 9_000)


def load_meta(run_dir: Path) -> RunMeta:
    path = Path(run_dir) / "meta.json"
    if not path.is_file():
        raise HistoryError(f"{path}: missing (every results directory has a meta.json)")
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise HistoryError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(raw, dict):
        raise HistoryError(f"{path}: must hold a JSON object")
    for key, typ in META_REQUIRED.items():
        if key not in raw:
            raise HistoryError(f"{path}: required key {key!r} is missing")
        if not isinstance(raw[key], typ) or isinstance(raw[key], bool):
            raise HistoryError(f"{path}: key {key!r} must be {typ.__name__}, got {raw[key]!r}")
    version = str(raw.get("kafka_version") or NEWEST_KNOWN_KAFKA)
    mode = raw.get("consumer_mode") or "assign"
    if mode not in ("assign", "subscribe"):
        raise HistoryError(f"{path}: consumer_mode must be 'assign' or 'subscribe', got {mode!r}")
    settings = {str(k): v for k, v in (raw.get("broker_settings") or {}).items()}
    unclean = raw.get("unclean_leader_election")
    if unclean is None:
        unclean = str(settings.get("unclean.leader.election.enable", "false")).lower() == "true"
    elr = raw.get("elr_enabled")
    brokers, controllers = _node_ids(raw, "brokers", path), _node_ids(raw, "controllers", path)
    if set(brokers) & set(controllers):
        raise HistoryError(f"{path}: node ids {sorted(set(brokers) & set(controllers))} are listed as both "
                           "brokers and dedicated controllers")
    return RunMeta(
        run_id=raw["run_id"], partitions=raw["partitions"], replication_factor=raw["replication_factor"],
        min_insync_replicas=raw["min_insync_replicas"], kafka_version=version,
        topic=raw.get("topic") or "chaos", unclean_leader_election=bool(unclean),
        elr_enabled=bool(elr) if elr is not None else version_tuple(version) >= (4, 1),
        consumer_mode=mode, producers=tuple(raw.get("producers") or ()), broker_settings=settings,
        scenario=raw.get("scenario"), seed=raw.get("seed"), command=raw.get("command"),
        start_ns=raw.get("start_ns"), end_ns=raw.get("end_ns"), brokers=brokers, controllers=controllers,
        drain=_drain(raw, path), interrupted=raw.get("interrupted") or None)


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


def _same_type(actual: pa.DataType, expected: pa.DataType) -> bool:
    if actual == expected:
        return True
    if pa.types.is_string(expected):
        return pa.types.is_string(actual) or pa.types.is_large_string(actual)
    if pa.types.is_list(expected):
        return (pa.types.is_list(actual) or pa.types.is_large_list(actual)) and \
            _same_type(actual.value_type, expected.value_type)
    return False


def validate_file(path: Path, schema: pa.Schema) -> None:
    """Check column names and types from the footer, and that non-nullable columns hold no nulls."""
    try:
        meta = pq.read_metadata(path)
        actual = pq.read_schema(path)
    except Exception as e:  # noqa: BLE001 - any unreadable Parquet file is the same user error
        raise HistoryError(f"{path}: not a readable Parquet file ({e})") from None
    for f in schema:
        if f.name not in actual.names:
            raise HistoryError(f"{path}: column {f.name!r} is missing (expected {f.type})")
        got = actual.field(f.name).type
        if not _same_type(got, f.type):
            raise HistoryError(f"{path}: column {f.name!r} has type {got}, expected {f.type}")
    required = [f.name for f in schema if not f.nullable]
    leaf = {meta.schema.column(i).path.split(".")[0]: i for i in range(meta.num_columns)}
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for name in required:
            stats = group.column(leaf[name]).statistics
            if stats is not None and stats.has_null_count and stats.null_count > 0 \
                    and not pa.types.is_list(schema.field(name).type):
                raise HistoryError(f"{path}: column {name!r} holds nulls, which the format forbids")


def validate_run(run_dir: Path) -> dict[str, Path]:
    """Validate every history file that exists; return {relative name: path} of those present."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise HistoryError(f"{run_dir}: not a directory")
    present = {}
    for name, (schema, required) in HISTORY_FILES.items():
        path = run_dir / name
        if not path.exists():
            if required:
                raise HistoryError(f"{path}: missing (required by the history format)")
            continue
        validate_file(path, schema)
        present[name] = path
    return present


def read_table(path: Path | None, schema: pa.Schema) -> pd.DataFrame:
    """A history file as pandas with nullable integers; an absent optional file is an empty frame."""
    table = schema.empty_table() if path is None else pq.read_table(path, columns=schema.names)
    return table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype()}.get)
