"""verdict.json and meta.json follow their published JSON Schemas (docs/schemas/): a valid, an invalid and a
no-verdict run as the checker writes them, and meta.json as the history writer writes it."""
import json

import jsonschema
import pytest

from kafka_chaos.harness.cli import main
from kafka_chaos.history.meta import RunMeta
from kafka_chaos.history.writer import HistoryWriter
from tests.checkers.conftest import read, send, write_run
from tests.schemas import SCHEMAS, validate, validate_run

DRAINED = {"healthy": True, "incomplete": [], "ends": {"0": 10}, "records": 10}


def meta(**kw):
    return dict(partitions=1, replication_factor=3, min_insync_replicas=2, kafka_version="4.4.0", brokers=[1, 2, 3],
                controllers=[101], drain=DRAINED, producers=[{"name": "p0", "acks": "all", "idempotent": True}]) | kw


@pytest.mark.parametrize("case", ["valid", "invalid", "no verdict"])
def test_the_checkers_verdicts_follow_the_schema(tmp_path, case):
    sends = [send("a", offset=0)]
    reads = {"valid": [read("a", offset=0)], "invalid": [read("a", offset=0), read("zz", offset=1)],
             "no verdict": []}[case]
    m = meta(drain=None, interrupted="killed") if case == "no verdict" else meta()
    run = write_run(tmp_path / "r", sends, reads, **m)
    code = main(["check", str(run), "--engine", "pandas", "--force"])
    assert code == {"valid": 0, "invalid": 1, "no verdict": 3}[case]
    validate_run(run)


def test_a_run_meta_as_written_follows_the_schema(tmp_path):
    HistoryWriter.create(tmp_path, "r1", RunMeta(run_id="r1", partitions=3, replication_factor=3,
                                                 min_insync_replicas=2, scenario="leader-kill", seed=1,
                                                 producers=({"name": "p0", "acks": "all", "idempotent": True},),
                                                 brokers=(1, 2, 3), controllers=(101,)))
    validate(json.loads((tmp_path / "r1" / "meta.json").read_text()), "meta")


def test_the_schemas_reject_what_they_must():
    with pytest.raises(jsonschema.ValidationError):
        validate({"run_id": "r", "partitions": 0, "replication_factor": 3, "min_insync_replicas": 2}, "meta")
    assert sorted(p.name for p in SCHEMAS.iterdir()) == ["meta.schema.json", "verdict.schema.json"]


def test_check_json_prints_only_json_whose_verdicts_follow_the_schema(tmp_path, capsys):
    run = write_run(tmp_path / "r", [send("a", offset=0)], [read("a", offset=0), read("zz", offset=1)], **meta())
    code = main(["check", str(run), "--engine", "pandas", "--force", "--json"])
    (entry,) = json.loads(capsys.readouterr().out)
    assert code == entry["exit_code"] == 1 and entry["status"] == "checked" and entry["run_id"] == "r"
    validate(entry["verdict"], "verdict")
