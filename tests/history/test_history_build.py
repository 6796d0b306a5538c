"""Journals become the exact Parquet history of docs/history.md, including after a crash mid-line."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.harness.cli import main as cli_main
from kafka_chaos.history.journal import esc, producer_paths, reads_paths, unesc, write_sidecar
from kafka_chaos.history.schema import CLUSTER_SCHEMA, FAULTS_SCHEMA, READS_SCHEMA, SENDS_SCHEMA
from kafka_chaos.history.writer import HistoryWriter, repair

META = {"partitions": 3, "replication_factor": 3, "min_insync_replicas": 2}


def write_producer_journal(journal_dir, process, invokes, completes, acks="all", idempotent=True):
    paths = producer_paths(journal_dir, process)
    write_sidecar(paths["sidecar"], {"kind": "sends", "process": process, "producer": f"p{process}",
                                     "acks": acks, "idempotent": idempotent})
    paths["invoke"].write_text(invokes)
    paths["complete"].write_text(completes)


def test_each_send_is_one_row_joined_from_its_invoke_and_completion(tmp_path):
    h = HistoryWriter(tmp_path / "run1", META)
    write_producer_journal(h.journal_dir, 0,
                           "0-0\t0\t0\t100\n0-1\t1\t1\t200\n0-2\t2\t2\t300\n0-3\t0\t0\t400\n",
                           "0-1\tfail\t_PURGE_QUEUE\t1\t\\N\t260\n0-0\tok\t\\N\t0\t17\t250\n"
                           "0-2\tinfo\t_MSG_TIMED_OUT\t2\t\\N\t900\n")
    write_producer_journal(h.journal_dir, 1, "1-0\t0\t\\N\t150\n", "1-0\tok\t\\N\t2\t\\N\t180\n", acks="0",
                           idempotent=False)
    summary = h.finalize()
    t = pq.read_table(h.history_dir / "sends.parquet")
    assert t.schema == SENDS_SCHEMA
    rows = t.to_pylist()
    assert [r["value"] for r in rows] == ["0-0", "1-0", "0-1", "0-2", "0-3"]      # in order of invocation
    assert [r["op_id"] for r in rows] == [0, 1, 2, 3, 4]
    by_value = {r["value"]: r for r in rows}
    assert by_value["0-0"] == {"op_id": 0, "process": 0, "producer": "p0", "acks": "all", "idempotent": True,
                                   "key": "0", "value": "0-0", "partition": 0, "offset": 17, "outcome": "ok",
                                   "error": None, "t_invoke_ns": 100, "t_complete_ns": 250}
    assert (by_value["0-1"]["outcome"], by_value["0-1"]["error"]) == ("fail", "_PURGE_QUEUE")
    assert (by_value["0-2"]["outcome"], by_value["0-2"]["offset"]) == ("info", None)
    # the partition comes from the delivery report when the send asked for none; acks=0 has no offset
    assert (by_value["1-0"]["partition"], by_value["1-0"]["offset"], by_value["1-0"]["acks"]) == (2, None, "0")
    # a send whose report never came is info with no completion time
    assert (by_value["0-3"]["outcome"], by_value["0-3"]["t_complete_ns"]) == ("info", None)
    assert (summary.sends, summary.ok, summary.fail, summary.info, summary.without_outcome) == (5, 2, 1, 2, 1)


def test_a_partial_last_line_from_a_killed_worker_is_dropped(tmp_path):
    h = HistoryWriter(tmp_path / "run", META)
    write_producer_journal(h.journal_dir, 0, "0-0\t0\t0\t100\n0-1\t1\t1\t20", "0-0\tok\t\\N\t0\t5\t150\n0-1\to")
    summary = repair(h.dir)
    assert [r["value"] for r in pq.read_table(h.history_dir / "sends.parquet").to_pylist()] == ["0-0"]
    assert summary.ok == 1


def test_reads_keep_consumer_phase_and_escaped_text(tmp_path):
    h = HistoryWriter(tmp_path / "run", META)
    for name, phase in (("c0", "live"), ("final", "final")):
        paths = reads_paths(h.journal_dir, name)
        write_sidecar(paths["sidecar"], {"kind": "reads", "consumer": name, "phase": phase})
        tab_value, odd_key = esc("a\tb"), esc("k\\N")
        paths["data"].write_text(f"0\t1\t5\t\\N\t{tab_value}\t10\n1\t1\t6\t{odd_key}\t0-7\t11\n")
    summary = h.finalize()
    t = pq.read_table(h.history_dir / "reads.parquet")
    assert t.schema == READS_SCHEMA
    rows = [r for r in t.to_pylist() if r["consumer"] == "c0"]
    assert rows == [
        {"consumer": "c0", "seq": 0, "phase": "live", "partition": 1, "offset": 5, "key": None, "value": "a\tb",
         "t_ns": 10},
        {"consumer": "c0", "seq": 1, "phase": "live", "partition": 1, "offset": 6, "key": "k\\N", "value": "0-7",
         "t_ns": 11}]
    assert (summary.reads, summary.final_reads) == (2, 2)


@pytest.mark.parametrize("text", [None, "", "plain", "\\N", "a\tb\nc\\d\r"])
def test_escaping_round_trips(text):
    assert unesc(esc(text)) == text


def test_fault_events_and_cluster_samples_become_their_parquet_files(tmp_path):
    h = HistoryWriter(tmp_path / "run", META)
    event = SimpleNamespace(t_ns=5, action="start", fault="leader-kill", nodes=[2],
                            details={"effect": "kill", "signal": "SIGKILL"})
    h.record_fault(event)
    h.record_fault(SimpleNamespace(**(vars(event) | {"t_ns": 9, "action": "heal"})))
    h.record_cluster_sample([{"t_ns": 7, "partition": 0, "leader": None, "isr": [1, 3], "elr": None,
                              "high_watermark": None, "controller": 101}])
    summary = h.finalize()
    faults = pq.read_table(h.history_dir / "faults.parquet")
    cluster = pq.read_table(h.history_dir / "cluster.parquet")
    assert faults.schema == FAULTS_SCHEMA and cluster.schema == CLUSTER_SCHEMA
    assert [(r["action"], r["nodes"], json.loads(r["details"])["effect"]) for r in faults.to_pylist()] == [
        ("start", [2], "kill"), ("heal", [2], "kill")]
    assert cluster.to_pylist()[0]["isr"] == [1, 3]
    assert (summary.faults, summary.cluster_samples) == (2, 1)


def test_a_run_without_faults_or_samples_has_no_such_files(tmp_path):
    h = HistoryWriter(tmp_path / "run", META)
    h.finalize()
    assert pq.read_table(h.history_dir / "sends.parquet").num_rows == 0
    assert not (h.history_dir / "faults.parquet").exists()
    assert not (h.history_dir / "cluster.parquet").exists()


def test_meta_json_is_written_at_start_with_the_run_id(tmp_path):
    h = HistoryWriter.create(tmp_path, "r42", META | {"scenario": "leader-isolate"})
    h.update_meta(start_ns=1, seed=None)
    assert json.loads((tmp_path / "r42" / "meta.json").read_text()) == META | {
        "run_id": "r42", "scenario": "leader-isolate", "start_ns": 1}


def test_a_directory_holding_a_run_is_refused_unless_overwriting(tmp_path):
    HistoryWriter(tmp_path / "run", META)
    with pytest.raises(UsageError, match="already holds a run"):
        HistoryWriter(tmp_path / "run", META)
    h = HistoryWriter(tmp_path / "run", META, overwrite=True)
    assert list(h.journal_dir.iterdir()) != [] and (h.dir / "meta.json").exists()


def test_meta_without_required_keys_is_refused(tmp_path):
    with pytest.raises(UsageError, match="min_insync_replicas"):
        HistoryWriter(tmp_path / "run", {"partitions": 3, "replication_factor": 3})


def test_history_repair_command(tmp_path, capsys):
    h = HistoryWriter(tmp_path / "run", META)
    write_producer_journal(h.journal_dir, 0, "0-0\t0\t0\t100\n", "")
    assert cli_main(["history", "repair", str(h.dir)]) == 0
    assert "1 sends (0 ok, 0 fail, 1 info, of which 1 without a report)" in capsys.readouterr().out
    assert pq.read_table(h.history_dir / "sends.parquet").num_rows == 1


def test_history_repair_of_something_that_is_no_run_exits_2(tmp_path, capsys):
    assert cli_main(["history", "repair", str(tmp_path / "nope")]) == 2
    assert "no such results directory" in capsys.readouterr().err
