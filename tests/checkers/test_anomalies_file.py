"""anomalies.parquet keeps nanosecond times exact, whichever finder's rows reach it: the consumer-group and
transaction rows are built one dict at a time, and a column of times with a None in it used to become float64
(rounded to 256 ns), then Float64 when concatenated with the send rows, and readers failed to cast it back."""
import pandas as pd
import pyarrow.parquet as pq

from kafka_chaos.checkers.instances import rows_frame
from kafka_chaos.checkers.judge.verdict_file import anomalies_table

T = 1_795_695_538_122_145_281          # a nanosecond time of 2026, odd: no double holds it


def judged(**columns) -> pd.DataFrame:
    base = {"kind": ["stall"], "partition": [0], "offset": [None], "value": [None], "producer": [None],
            "op_id": [None], "t_invoke_ns": [T - 5], "t_complete_ns": [T], "t_read_ns": [None],
            "classification": ["allowed"], "durability": [None], "reason": ["r"]}
    return pd.DataFrame(base | columns)


def test_rows_built_one_at_a_time_keep_their_nanosecond_times_exact():
    rows = rows_frame([{"kind": "commit_backwards", "partition": 1, "offset": 7, "t_complete_ns": T},
                       {"kind": "group_reread", "partition": 2, "offset": 9, "t_read_ns": T + 2}],
                      ["kind", "partition", "offset", "value", "t_read_ns", "t_complete_ns", "classification"])
    assert str(rows["t_complete_ns"].dtype) == "Int64" and rows["t_complete_ns"][0] == T
    assert rows["t_read_ns"][1] == T + 2 and pd.isna(rows["t_read_ns"][0])
    sends = judged().astype({"t_complete_ns": "Int64"})
    both = pd.concat([f.dropna(axis=1, how="all") for f in (sends, rows)], ignore_index=True)   # as check.py
    assert str(both["t_complete_ns"].dtype) == "Int64" and both["t_complete_ns"].tolist()[:2] == [T, T]


def test_the_file_reads_back_exactly_even_from_a_float_column(tmp_path):
    frame = judged(t_complete_ns=pd.array([float(T)], dtype="Float64"), t_read_ns=[float("nan")])
    pq.write_table(anomalies_table(frame), tmp_path / "anomalies.parquet")
    back = pq.read_table(tmp_path / "anomalies.parquet").to_pandas()          # failed: ArrowInvalid, beyond 2^53
    assert back["t_complete_ns"][0] == int(float(T)) and pd.isna(back["t_read_ns"][0])
    assert back["t_invoke_ns"][0] == T - 5
