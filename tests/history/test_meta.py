"""meta.json is written and read in one place: what the runner builds is what the checker reads back."""
import json

import pytest

from kafka_chaos.history.layout import is_run_dir, run_dirs
from kafka_chaos.history.meta import HistoryError, RunMeta, load_meta, read_meta_dict
from kafka_chaos.history.writer import HistoryWriter


def a_meta(**kw) -> RunMeta:
    return RunMeta(run_id="r1", partitions=3, replication_factor=3, min_insync_replicas=2, kafka_version="3.9.2",
                   scenario="leader-kill", seed=7, producers=({"name": "p0", "acks": "all", "idempotent": True},),
                   brokers=(1, 2, 3), controllers=(101,), duration_s=60.0,
                   fault_plan=({"start_s": 10.0, "fault": "leader-kill", "heal_s": 30.0},),
                   extra={"test_id": "tests/x.py::y"}, **kw)


def test_a_run_meta_written_by_the_history_writer_reads_back_equal(tmp_path):
    meta = a_meta()
    writer = HistoryWriter.create(tmp_path, "r1", meta)
    writer.update_meta(start_ns=5, end_ns=9)
    back = load_meta(tmp_path / "r1")
    assert back == RunMeta(**{**meta.__dict__, "start_ns": 5, "end_ns": 9, "elr_enabled": True})
    assert json.loads((tmp_path / "r1" / "meta.json").read_text())["test_id"] == "tests/x.py::y"


def test_the_run_id_is_the_directory_name_whatever_the_meta_says(tmp_path):
    HistoryWriter.create(tmp_path, "named-by-dir", a_meta())
    assert load_meta(tmp_path / "named-by-dir").run_id == "named-by-dir"


def test_a_partial_meta_is_read_leniently_for_the_report_and_strictly_for_the_checker(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"scenario": "x"}))
    assert read_meta_dict(tmp_path) == {"scenario": "x"}
    with pytest.raises(HistoryError, match="run_id"):
        load_meta(tmp_path)
    assert read_meta_dict(tmp_path / "absent") is None


def test_a_results_directory_is_one_with_meta_json_or_history(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "meta.json").write_text("{}")
    (tmp_path / "b" / "history").mkdir(parents=True)
    (tmp_path / "c").mkdir()
    assert [p.name for p in run_dirs(tmp_path)] == ["a", "b"]
    assert is_run_dir(tmp_path / "b") and not is_run_dir(tmp_path / "c") and not is_run_dir(tmp_path / "none")
