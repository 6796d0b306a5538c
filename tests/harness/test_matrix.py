"""The version matrix without a cluster: parsing the list of releases, and the comparison page from run
directories (meta.json and verdict.json as the runner writes them)."""
import json

import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.harness.matrix import is_matrix, parse_matrix
from kafka_chaos.report.matrix import markdown, matrix_row, write_comparison


def test_each_release_runs_its_default_mode_unless_one_is_named():
    assert parse_matrix("2.8.2,3.9.2:zookeeper,4.4.0", None) == [
        ("2.8.2", "zookeeper"), ("3.9.2", "zookeeper"), ("4.4.0", "kraft")]
    assert parse_matrix("2.8.2,3.9.2,4.4.0", None)[1] == ("3.9.2", "kraft")
    # --metadata zookeeper applies where the release has it; 4.x has only KRaft
    assert parse_matrix("3.9.2,4.4.0", "zookeeper") == [("3.9.2", "zookeeper"), ("4.4.0", "kraft")]
    assert is_matrix("2.8.2,3.9.2") and is_matrix("3.9.2:zookeeper") and not is_matrix("3.9.2")


@pytest.mark.parametrize("bad,why", [("2.8.2,,4.4.0", "empty entry"), ("4.4.0:zookeeper", "no zookeeper mode"),
                                     ("2.8.2,2.8.2", "twice"), ("2.8,4.4.0", "not a Kafka release version")])
def test_a_bad_list_is_refused_before_anything_starts(bad, why):
    with pytest.raises(UsageError, match=why):
        parse_matrix(bad, None)


def _run(tmp_path, version, mode, valid, lost, disagreements, rules):
    d = tmp_path / f"run-{version}"
    d.mkdir()
    (d / "meta.json").write_text(json.dumps({"run_id": d.name, "kafka_version": version, "metadata_mode": mode}))
    (d / "verdict.json").write_text(json.dumps({
        "valid": valid, "violations": {} if valid else {"lost": lost}, "anomalies": {"lost": lost,
                                                                                    "lost_after_read": 0},
        "predicted": {"lost": "expected"}, "model_disagreements": [{}] * disagreements,
        "model": {"release_rules": [{"rule": r, "modelled": True} for r in rules]}}))
    return d


def test_the_comparison_page_has_a_row_per_release_in_order(tmp_path):
    runs = [_run(tmp_path, "1.1.1", "zookeeper", True, 12, 1, ["leader_epoch_truncation", "zookeeper_controller"]),
            _run(tmp_path, "4.4.0", "kraft", False, 3, 0, ["eligible_leader_replicas"])]
    index = write_comparison(runs, tmp_path / "matrix", "leader-kill, acks=1")
    rows = [matrix_row(r) for r in runs]
    assert [(r.release, r.metadata, r.verdict, r.lost, r.disagreements) for r in rows] == [
        ("1.1.1", "zookeeper", "valid", 12, 1), ("4.4.0", "kraft", "violation: lost=3", 3, 0)]
    assert rows[0].rules == "KIP-101, ZK controller" and rows[1].rules == "ELR"
    page = index.read_text()
    assert page.index("1.1.1") < page.index("4.4.0") and "../run-1.1.1/report.html" in page
    md = (tmp_path / "matrix" / "comparison.md").read_text()
    assert md.startswith("leader-kill, acks=1") and markdown(rows) in md
