"""`kafka-chaos check` on a real Spark standalone cluster (a master and two workers on loopback, from pyspark's own
distribution) and through spark-submit gives exactly the local result, and the cluster leaves nothing behind.

The runs: a real chaos run (all-kill, acks=1: hundreds of lost writes, reordered sends, stalls) when this machine
has one (KAFKA_CHAOS_SAMPLE_RUN, by default one of /work/runs), and a synthetic run with injected anomalies of every
kind. Each engine checks its own copy, in a fresh process, with --force.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafka_chaos.history.synthetic import write_synthetic_run
from tests.checkers.spark_standalone import SPARK_HOME, Standalone, assert_same

pytestmark = pytest.mark.spark

BIN = Path(sys.executable).parent
SAMPLE_RUN = Path(os.environ.get("KAFKA_CHAOS_SAMPLE_RUN",
                                 "/work/runs/4.4.0/20261123T044213-all-kill-acks1-isr2-s1"))
INJECT = {"lost": 2, "duplicate": 3, "phantom": 1, "divergent": 2, "failed_read": 1, "offset_mismatch": 2,
          "nonmonotonic_send": 3, "poll_skip": 2}
DRIVER = {"KAFKA_CHAOS_SPARK_DRIVER_MEMORY": "2g"}        # beside two workers, on a 2-core 24 GiB machine


def copy_run(source: Path, target: Path) -> None:
    """What `check` reads: meta.json and the history's Parquet files (no journal, logs or earlier verdict)."""
    (target / "history").mkdir(parents=True)
    shutil.copy(source / "meta.json", target)
    for f in (source / "history").glob("*.parquet"):
        shutil.copy(f, target / "history")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source")
    if (SAMPLE_RUN / "meta.json").exists():
        copy_run(SAMPLE_RUN, source / "real")
    write_synthetic_run(source / "synthetic", sends=3000, seed=4, consumers=2, inject=INJECT)
    return source


def results_copy(runs: Path, target: Path) -> Path:
    for run in runs.iterdir():
        shutil.copytree(run, target / run.name)
    return target


def outputs(root: Path) -> dict[str, tuple[dict, object]]:
    """Per run: verdict.json without `checker` (which Spark application judged it) and `timings` (how long it
    took), and anomalies.parquet."""
    out = {}
    for run in sorted(p for p in root.iterdir() if p.is_dir()):
        verdict = json.loads((run / "verdict.json").read_text())
        verdict.pop("checker", None)
        verdict.pop("timings", None)
        out[run.name] = (verdict, pq.read_table(run / "anomalies.parquet"))
    return out


@pytest.fixture(scope="module")
def local(runs, tmp_path_factory) -> tuple[int, dict]:
    """The reference: the same check in local mode, in a fresh process."""
    root = results_copy(runs, tmp_path_factory.mktemp("local"))
    done = subprocess.run([str(BIN / "kafka-chaos"), "check", str(root), "--force"], env={**os.environ, **DRIVER},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    result = outputs(root)
    synthetic = result["synthetic"][0]
    assert {k: synthetic["anomalies"][k] for k in INJECT} == INJECT       # instances to compare, of every kind
    if "real" in result:
        assert result["real"][0]["anomalies"]["lost"] > 100
    return done.returncode, result


def test_a_standalone_cluster_gives_exactly_the_local_result_and_leaves_nothing(runs, local, tmp_path):
    root = results_copy(runs, tmp_path / "results")
    cluster = Standalone(tmp_path / "spark", workers=2, cores=1, memory="2g").start()
    check = None
    try:
        # A Python the executors cannot start: the check must not need one there.
        env = cluster.env(**DRIVER, PYSPARK_PYTHON=str(tmp_path / "no-python-on-executors"))
        with (tmp_path / "check.out").open("w+") as out:
            check = subprocess.Popen([str(BIN / "kafka-chaos"), "check", str(root), "--force", "--spark-master",
                                      cluster.url], env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
            outside, scratch = set(), False
            while check.poll() is None:                   # what the driver, executors and daemons hold open
                outside |= cluster.files_outside(allowed=tmp_path)
                scratch = scratch or bool(list((tmp_path / "spark" / "scratch").glob("*/*")))
                time.sleep(0.5)
            out.seek(0)
            output = out.read()
        status = cluster.idle()
    finally:
        if check is not None and check.poll() is None:
            check.kill()
        cluster.stop()
    assert check.returncode == local[0], output
    assert_same(outputs(root), local[1])
    for run in root.iterdir():
        if run.is_dir():
            checker = json.loads((run / "verdict.json").read_text()).get("checker", {})
            assert checker.get("spark_master", cluster.url) == cluster.url
    # One application, and each worker's executor ran tasks of it.
    assert [a["state"] for a in status["completedapps"]] == ["FINISHED"], status["completedapps"]
    executors = sorted((tmp_path / "spark" / "work").glob("worker*/app-*/*/stderr"))
    assert [e.parts[-4] for e in executors] == ["worker0", "worker1"]
    assert all("Running task" in e.read_text() for e in executors)

    deadline = time.monotonic() + 15                # the driver's JVM exits just after its Python
    while cluster.leftovers() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert cluster.leftovers() == []
    # Scratch, shuffle files and temp files went to the test's folder, none to the system's temp directory.
    assert outside == set() and scratch


def test_spark_submit_runs_the_check_from_the_file_the_package_names(runs, local, tmp_path):
    root = results_copy(runs, tmp_path / "results")
    entry = subprocess.run([sys.executable, "-m", "kafka_chaos.harness.spark_submit"], capture_output=True,
                           text=True, check=True).stdout.strip()
    assert Path(entry).is_file()
    (tmp_path / "conf").mkdir()
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_HOME": str(SPARK_HOME),
           "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_DIRS": str(tmp_path / "scratch"),
           "SPARK_CONF_DIR": str(tmp_path / "conf")}
    done = subprocess.run([str(SPARK_HOME / "bin" / "spark-submit"), "--master", "local[2]", "--driver-memory", "2g",
                           entry, "check", str(root), "--force"], env=env, capture_output=True, text=True,
                          timeout=900, cwd=tmp_path)
    assert done.returncode == local[0], done.stdout + done.stderr
    assert_same(outputs(root), local[1])
    for run in root.iterdir():
        if run.is_dir():
            checker = json.loads((run / "verdict.json").read_text()).get("checker", {})
            assert checker.get("spark_master", "local[2]") == "local[2]"     # spark-submit's master, not local[*]
