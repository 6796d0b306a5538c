"""The exactly-once workload's journals become history/eos.parquet and history/lso.parquet (docs/history.md)."""
from __future__ import annotations

import json

import pyarrow.parquet as pq

from kafka_chaos.history.build import build_history
from kafka_chaos.history.eos import input_value, output_value, payload, txn_line
from kafka_chaos.history.journal import write_sidecar
from kafka_chaos.history.reader import validate_run
from kafka_chaos.history.schema import EOS_SCHEMA, LSO_SCHEMA


def test_eos_journal_lines_become_the_eos_table_and_the_samples_an_lso_table(tmp_path):
    journal = tmp_path / "history" / "journal"
    journal.mkdir(parents=True)
    write_sidecar(journal / "eos-e0.json", {"kind": "eos", "processor": "e0", "process": 0})
    (journal / "eos-e0.tsv").write_text(
        txn_line(0, "committed", None, [(0, 0), (0, 1), (2, 0)], [(0, 5), (0, 6), (2, 3)], [(0, 2), (2, 1)], 10, 20,
                 30)
        + txn_line(1, "aborted", "NOT_COORDINATOR", [(1, 0)], [(1, None)], [(1, 1)], 40, None, 50)
        + "2\tcommitted\t\\N\t0:")                       # a crash mid-line: dropped
    (journal / "cluster.jsonl").write_text(
        json.dumps({"t_ns": 1, "partition": 0, "leader": 1, "isr": [1], "high_watermark": 9,
                    "last_stable_offset": 7, "controller": 4}) + "\n"
        + json.dumps({"t_ns": 1, "partition": 1, "leader": 1, "isr": [1], "high_watermark": 9, "controller": 4})
        + "\n")
    build_history(tmp_path)
    eos = pq.read_table(tmp_path / "history/eos.parquet")
    assert eos.schema.equals(EOS_SCHEMA)
    rows = eos.to_pylist()
    assert [r["outcome"] for r in rows] == ["committed", "aborted"]
    assert rows[0]["read_offsets"] == [0, 1, 0] and rows[0]["commit_partitions"] == [0, 2]
    assert rows[1]["write_offsets"] == [None] and rows[1]["t_commit_ns"] is None
    lso = pq.read_table(tmp_path / "history/lso.parquet")
    assert lso.schema.equals(LSO_SCHEMA) and lso.to_pylist() == [
        {"t_ns": 1, "partition": 0, "high_watermark": 9, "last_stable_offset": 7}]
    (tmp_path / "meta.json").write_text(json.dumps({"run_id": "x", "partitions": 3, "replication_factor": 3,
                                                    "min_insync_replicas": 2}))
    assert "history/eos.parquet" in validate_run(tmp_path)


def test_the_transform_is_a_function_of_the_record_and_the_copy_is_named_after_the_at():
    v = input_value(7, 2, 11)
    assert output_value(2, 11, v, "e1-r1", 4).split("@") == [payload(2, 11, v), "e1-r1.4"]
    assert payload(2, 11, v) == payload(2, 11, input_value(7, 2, 11)) != payload(2, 11, input_value(8, 2, 11))
