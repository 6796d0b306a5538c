"""On real brokers: `run --repeat 2` is two judged runs with consecutive seeds, on one cluster, checked by one Spark
application; and a pytest session's chaos tests share one Spark application too.

The observable is verdict.json's `checker`: Spark's application id and start time, which a second SparkContext in
the same process would change.
"""
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafka_chaos.checkers.check import VERDICTS_TABLE, RunOutcome, exit_code
from tests.harness.test_run_cli import our_containers

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]


def verdicts(root: Path) -> dict[int, dict]:
    """seed -> verdict.json of every run under `root`."""
    out = {}
    for meta in root.glob("*/meta.json"):
        v = meta.parent / "verdict.json"
        assert v.exists(), f"{meta.parent}: no verdict.json"
        out[json.loads(meta.read_text())["seed"]] = json.loads(v.read_text())
    return out


def one_spark_application(found: dict[int, dict]) -> None:
    checkers = [v["checker"] for v in found.values()]
    assert {c["engine"] for c in checkers} == {"spark"}
    assert len({(c["spark_application_id"], c["spark_started_ms"]) for c in checkers}) == 1, checkers


def test_repeat_2_runs_consecutive_seeds_on_one_cluster_and_one_spark(tmp_path):
    before = our_containers()
    proc = subprocess.run(
        [sys.executable, "-m", "kafka_chaos.harness.cli", "run", "leader-kill", "--repeat", "2", "--duration", "10",
         "--seed", "41", "--results", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    found = verdicts(tmp_path)
    assert sorted(found) == [41, 42], out[-3000:]
    assert all(v["status"] in ("valid", "invalid", "incomplete") for v in found.values())
    one_spark_application(found)
    assert out.count("phase: cluster up") == 1, out[-3000:]              # one cluster for both runs
    table = pq.read_table(tmp_path / VERDICTS_TABLE).to_pandas()
    assert sorted(table["run_id"]) == sorted(v["run_id"] for v in found.values())
    outcomes = [RunOutcome(v["run_id"], tmp_path, "checked", v["valid"], v) for v in found.values()]
    assert proc.returncode == exit_code(outcomes), out[-3000:]           # the worst run's
    assert "2 run(s):" in proc.stdout
    assert our_containers() == before                                     # the cluster is gone


PLUGIN_TESTS = '''
import pytest

@pytest.mark.chaos
def test_first(chaos_run):
    chaos_run("leader-kill", seed=51)

@pytest.mark.chaos
def test_second(chaos_run):
    chaos_run("leader-kill", seed=52)
'''


def test_a_pytest_session_checks_its_chaos_tests_with_one_spark_application(tmp_path):
    (tmp_path / "test_two_runs.py").write_text(PLUGIN_TESTS)
    results = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_two_runs.py", "--chaos-suite", "full",
         "--chaos-duration", "10", "--chaos-results", str(results), "--rootdir", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    found = verdicts(results)
    assert sorted(found) == [51, 52], proc.stdout[-3000:] + proc.stderr[-2000:]
    one_spark_application(found)
