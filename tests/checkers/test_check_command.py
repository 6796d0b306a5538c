"""`kafka-chaos check`: outputs, exit codes, bad input, existing verdicts, many runs at once."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_chaos.harness.cli import main
from kafka_chaos.history.schema import ANOMALIES_SCHEMA, ANOMALY_KINDS
from kafka_chaos.history.synthetic import write_synthetic_run
from tests.checkers.conftest import read, send, write_run


def check(*args, engine="pandas"):
    return main(["check", *map(str, args), "--engine", engine])


def test_a_clean_run_is_valid_and_writes_verdict_and_anomalies(tmp_path):
    run = write_synthetic_run(tmp_path / "clean", sends=1500, seed=2)
    assert check(run) == 0
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["violations"] == {}
    assert set(verdict["anomalies"]) == set(ANOMALY_KINDS)
    assert verdict["anomalies"]["recovered"] > 0
    assert verdict["predicted"]["lost"] == "never"
    assert verdict["predicted"]["unavailable_windows"]          # the killed leader's partitions
    stall = max(verdict["availability"]["stalls"], key=lambda s: s[1] - s[0])
    assert stall[3] < 0.1                                       # the kill's stall lay inside the predicted window
    assert verdict["status"] == "valid" and verdict["incomplete"]["status"] == "complete"
    assert set(verdict["counts"]) == {"sends", "ok", "fail", "info", "reads", "final_reads"}
    table = pq.read_table(run / "anomalies.parquet")
    assert table.schema.equals(ANOMALIES_SCHEMA)
    assert set(table.column("classification").to_pylist()) == {"allowed"}


def test_guaranteed_lost_writes_and_assign_mode_poll_skips_are_violations(tmp_path):
    run = write_synthetic_run(tmp_path / "bad", sends=1500, seed=2, inject={"lost": 2, "poll_skip": 1})
    assert check(run) == 1
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["violations"] == {"lost": 2, "poll_skip": 1}
    assert verdict["observed"]["lost_guaranteed"] == 2
    rows = pq.read_table(run / "anomalies.parquet").to_pandas()
    lost = rows[rows["kind"] == "lost"]
    assert set(lost["durability"]) == {"guaranteed"} and set(lost["classification"]) == {"violation"}


def test_duplicates_are_allowed_for_a_producer_without_idempotence(tmp_path):
    sends = [send("a", offset=0, idempotent=False), send("b", offset=1, idempotent=False)]
    reads = [read("a", offset=0), read("b", offset=1), read("a", offset=2)]
    run = write_run(tmp_path / "dup", sends, reads)
    assert check(run) == 0
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["anomalies"]["duplicate"] == 1 and verdict["valid"]


def test_subscribe_mode_allows_poll_skips(tmp_path):
    sends = [send(v, offset=o) for v, o in (("a", 0), ("b", 1), ("c", 2))]
    reads = [read("a", offset=0, consumer="c0"), read("c", offset=2, consumer="c0")] + \
        [read(v, offset=o) for v, o in (("a", 0), ("b", 1), ("c", 2))]
    assert check(write_run(tmp_path / "assign", sends, reads)) == 1
    assert check(write_run(tmp_path / "subscribe", sends, reads, consumer_mode="subscribe")) == 0


def test_a_producer_profile_with_null_retries_and_rate_checks(tmp_path):
    # The workload's meta.json writes null for "client default" retries and for an unlimited rate.
    profile = {"name": "p0", "acks": "all", "idempotent": False, "max_in_flight": 5, "retries": None,
               "delivery_timeout_ms": 30_000, "request_timeout_ms": 10_000, "linger_ms": 5, "rate": None}
    run = write_run(tmp_path / "nulls", [send("a", offset=0, idempotent=False)], [read("a", offset=0)],
                    producers=[profile], brokers=[1, 2, 3], controllers=[101])
    assert check(run) == 0
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["predicted"]["duplicates"] == "possible"
    assert verdict["model"]["controllers"] == [101]


def test_a_run_with_no_faults_file_and_no_cluster_samples_still_checks(tmp_path):
    run = write_run(tmp_path / "bare", [send("a", offset=0)], [read("a", offset=0)])
    assert check(run) == 0
    assert json.loads((run / "verdict.json").read_text())["predicted"]["unavailable_windows"] == []


def test_an_empty_history_gets_no_verdict(tmp_path):
    run = write_run(tmp_path / "empty", [], [])
    assert check(run) == 3                       # a workload that never wrote tested nothing: never a pass
    verdict = json.loads((run / "verdict.json").read_text())
    assert verdict["counts"]["sends"] == 0 and verdict["valid"] is None
    assert "holds no send" in verdict["incomplete"]["run"][0]


def test_an_existing_verdict_is_kept_unless_forced(tmp_path, capsys):
    run = write_run(tmp_path / "again", [send("a", offset=0)], [read("a", offset=0)])
    (run / "verdict.json").write_text(json.dumps({"valid": False, "violations": {"lost": 1}}))
    assert check(run) == 1
    assert "verdict.json exists" in capsys.readouterr().out
    assert json.loads((run / "verdict.json").read_text())["valid"] is False
    assert main(["check", str(run), "--engine", "pandas", "--force"]) == 0
    assert json.loads((run / "verdict.json").read_text())["valid"] is True


def test_a_missing_column_exits_2_naming_file_and_column(tmp_path, capsys):
    run = write_run(tmp_path / "broken", [send("a", offset=0)], [read("a", offset=0)])
    table = pq.read_table(run / "history/sends.parquet").drop(["outcome"])
    pq.write_table(table, run / "history/sends.parquet")
    assert check(run) == 2
    err = capsys.readouterr().err
    assert "sends.parquet" in err and "'outcome'" in err


def test_a_wrong_column_type_exits_2(tmp_path, capsys):
    run = write_run(tmp_path / "typed", [send("a", offset=0)], [read("a", offset=0)])
    table = pq.read_table(run / "history/reads.parquet")
    table = table.set_column(table.schema.get_field_index("offset"), "offset",
                             pa.array(["0"], pa.string()))
    pq.write_table(table, run / "history/reads.parquet")
    assert check(run) == 2
    err = capsys.readouterr().err
    assert "reads.parquet" in err and "'offset'" in err and "int64" in err


def test_a_missing_file_or_meta_key_exits_2(tmp_path, capsys):
    run = write_run(tmp_path / "nofile", [send("a", offset=0)], [read("a", offset=0)])
    (run / "history/reads.parquet").unlink()
    assert check(run) == 2
    assert "reads.parquet" in capsys.readouterr().err
    run = write_run(tmp_path / "nometa", [send("a", offset=0)], [read("a", offset=0)])
    meta = json.loads((run / "meta.json").read_text())
    del meta["min_insync_replicas"]
    (run / "meta.json").write_text(json.dumps(meta))
    assert check(run) == 2
    assert "min_insync_replicas" in capsys.readouterr().err


def test_a_results_root_checks_every_run_and_writes_a_table(tmp_path):
    write_synthetic_run(tmp_path / "r1", sends=500, seed=1)
    write_synthetic_run(tmp_path / "r2", sends=500, seed=2, inject={"phantom": 1})
    write_run(tmp_path / "r3", [send("a", offset=0)], [read("a", offset=0)])
    assert check(tmp_path) == 1
    table = pq.read_table(tmp_path / "verdicts.parquet").to_pandas().set_index("run_id")
    assert table.loc["r1", "valid"] and table.loc["r3", "valid"] and not table.loc["r2", "valid"]
    assert table.loc["r2", "n_phantom"] == 1


@pytest.mark.spark
def test_spark_and_pandas_engines_write_the_same_verdict(spark, tmp_path):
    a = write_synthetic_run(tmp_path / "a", sends=2000, seed=5, inject={"lost": 1, "duplicate": 2, "divergent": 1})
    b = write_synthetic_run(tmp_path / "b", sends=2000, seed=6)
    assert check(a, b, engine="spark") == 1
    by_spark = {r: json.loads((tmp_path / r / "verdict.json").read_text()) for r in ("a", "b")}
    assert check(a, b, "--force") == 1
    by_pandas = {r: json.loads((tmp_path / r / "verdict.json").read_text()) for r in ("a", "b")}
    checkers = {r: (by_spark[r].pop("checker"), by_pandas[r].pop("checker")) for r in ("a", "b")}
    for verdict in [*by_spark.values(), *by_pandas.values()]:
        verdict.pop("timings")                          # where each check's time went: theirs alone
    assert by_spark == by_pandas
    # what judged them: one Spark application for both runs, then pandas
    assert checkers["a"] == checkers["b"]
    assert checkers["a"][0]["engine"] == "spark" and checkers["a"][1] == {"engine": "pandas"}
    assert checkers["a"][0]["spark_application_id"] == spark.sparkContext.applicationId
    # the divergent value was read live and is missing from the drain: a lost_after_read too
    assert by_spark["a"]["violations"] == {"lost": 1, "duplicate": 2, "divergent": 1, "lost_after_read": 1}
    assert (tmp_path / "verdicts.parquet").exists()
