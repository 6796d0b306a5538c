"""Load a results directory and check it against the documented history format before any analysis.

Schema checks read only Parquet footers, so they are cheap even for 100M-row files; a bad file fails fast with
exit 2, naming the file and the column, instead of failing deep inside a Spark job.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_chaos.history.meta import HistoryError
from kafka_chaos.history.schema import HISTORY_FILES


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


def sent_with(sends: Path | None) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """The acks levels and idempotence a run's sends used, as sorted tuples (empty without a sends file): what the
    model's predictions speak of. Two columns, acks dictionary-encoded: a fraction of a second at 10M sends."""
    if sends is None:
        return (), ()
    table = pq.read_table(sends, columns=["acks", "idempotent"], read_dictionary=["acks"])
    return (tuple(sorted(str(a) for a in pc.unique(table.column("acks")).to_pylist())),
            tuple(sorted(bool(i) for i in pc.unique(table.column("idempotent")).to_pylist())))
