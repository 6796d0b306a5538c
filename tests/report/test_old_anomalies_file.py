"""The report still opens an anomalies.parquet written before its integer columns were kept as integers: the
pandas metadata of those files asks for Float64 times, which pandas cannot cast back from int64 beyond 2^53."""
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kafka_chaos.history.schema import ANOMALIES_SCHEMA
from kafka_chaos.report.data import _read_parquet

T = 1_795_695_538_122_145_280


def test_an_anomalies_file_with_float_metadata_is_read_by_its_arrow_types(tmp_path):
    frame = pd.DataFrame({"kind": ["stall"], "partition": [0], "offset": [None], "value": [None], "producer": [None],
                          "op_id": [None], "t_invoke_ns": pd.array([T - 256], dtype="Int64"),
                          "t_complete_ns": pd.array([float(T)], dtype="Float64"), "t_read_ns": [None],
                          "classification": ["allowed"], "durability": [None], "reason": ["r"]})
    before_excuses = pa.schema([f for f in ANOMALIES_SCHEMA if f.name not in ("excuse", "cause_id", "cause_t_ns")])
    old = pa.Table.from_pandas(frame, schema=before_excuses, preserve_index=False)     # as the old writer did
    pq.write_table(old, tmp_path / "anomalies.parquet")
    rows = _read_parquet(tmp_path / "anomalies.parquet", None)
    assert rows["t_complete_ns"][0] == T and rows["t_invoke_ns"][0] == T - 256 and rows["kind"][0] == "stall"
