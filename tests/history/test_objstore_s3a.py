"""Spark reading runs straight from the real local S3 server through s3a:// (checkers/s3a.py's jars and settings):
the same rows as the file on disk, and `kafka-chaos check s3://bucket/prefix` on local Spark and on a standalone
cluster (a master and two workers on loopback) giving exactly the local verdicts and anomaly rows, its executors
reading the bucket, not the driver's staged copies. Credentials only through the environment (the SDK's default
chain). Each check runs in a process of its own: a Spark session another test left in this one would not take the
s3a jars.

The runs: a real chaos run (leader-kill, acks=1: 240 acked writes lost, all predicted) when this machine has the
stored ones (KAFKA_CHAOS_REAL_RUNS, by default /work/realruns/r), and a synthetic run with injected anomalies."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_chaos.base.errors import EnvironmentProblem
from kafka_chaos.history import objstore
from kafka_chaos.history.synthetic import write_synthetic_run
from tests.checkers.spark_standalone import Standalone, assert_same
from tests.checkers.test_spark_cluster import DRIVER, INJECT, copy_run
from tests.history.test_objstore import s3, server  # noqa: F401  (the fixtures: one real server per module)

pytestmark = [pytest.mark.objstore, pytest.mark.spark]
BIN = Path(sys.executable).parent
REAL_RUNS = Path(os.environ.get("KAFKA_CHAOS_REAL_RUNS", "/work/realruns/r"))
REAL_RUN = "20261127T180034-leader-kill-acks1-isr2-s101"
IGNORE = ("checker", "timings")        # which Spark application judged it, and how long it took


@pytest.fixture(scope="module")
def s3a_ready():
    from kafka_chaos.checkers import s3a

    try:
        return s3a.s3a_conf()
    except EnvironmentProblem as e:
        pytest.skip(f"{e.cause}: {e.remedy}")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source")
    if (REAL_RUNS / REAL_RUN / "meta.json").exists():
        copy_run(REAL_RUNS / REAL_RUN, source / REAL_RUN)          # a copy: the stored run is never touched
    write_synthetic_run(source / "synthetic", sends=3000, seed=4, consumers=2, inject=INJECT)
    return source


def outputs_local(root: Path) -> dict[str, tuple[dict, pa.Table]]:
    out = {}
    for run in sorted(p for p in root.iterdir() if p.is_dir()):
        verdict = json.loads((run / "verdict.json").read_text())
        out[run.name] = ({k: v for k, v in verdict.items() if k not in IGNORE},
                         pq.read_table(run / "anomalies.parquet"))
    return out


def outputs_bucket(root: objstore.S3Root) -> tuple[dict[str, tuple[dict, pa.Table]], dict[str, dict]]:
    out, checkers = {}, {}
    for name in objstore.list_names(root):
        verdict = json.loads(objstore.read_bytes(root, name, "verdict.json"))
        checkers[name] = verdict["checker"]
        out[name] = ({k: v for k, v in verdict.items() if k not in IGNORE},
                     pq.read_table(pa.BufferReader(objstore.read_bytes(root, name, "anomalies.parquet"))))
        assert "verdict.json" in objstore.marker(root, name)["files"]         # the marker rewritten with it
    return out, checkers


@pytest.fixture(scope="module")
def local(runs, tmp_path_factory) -> tuple[int, dict]:
    """The reference: `check` over a local copy, local Spark, in a fresh process."""
    root = tmp_path_factory.mktemp("local")
    for run in runs.iterdir():
        shutil.copytree(run, root / run.name)
    done = subprocess.run([str(BIN / "kafka-chaos"), "check", str(root)], env={**os.environ, **DRIVER},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    result = outputs_local(root)
    assert {k: result["synthetic"][0]["anomalies"][k] for k in INJECT} == INJECT
    return done.returncode, result


def upload(runs: Path, root: objstore.S3Root) -> None:
    for run in runs.iterdir():
        objstore.upload_run(run, root)


def test_spark_reads_an_uploaded_run_through_s3a(s3, s3a_ready, tmp_path):  # noqa: F811
    assert not any("secret" in k.lower() or "access.key" in k.lower() for k in s3a_ready)
    run = write_synthetic_run(tmp_path / "r1", sends=2000, seed=3)
    objstore.upload_run(run, s3)
    url = f"s3a://{s3.bucket}/{s3.prefix}/r1/history/sends.parquet"
    code = ("import json, sys; from pyspark.sql import SparkSession; b = SparkSession.builder.master('local[1]')"
            ".config('spark.ui.enabled', 'false'); conf = json.loads(sys.argv[1])\n"
            "for k, v in conf.items(): b = b.config(k, v)\n"
            "s = b.getOrCreate(); print('ROWS', s.read.parquet(sys.argv[2]).count()); s.stop()")
    done = subprocess.run([sys.executable, "-c", code, json.dumps(s3a_ready), url], capture_output=True, text=True,
                          timeout=540)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = int(done.stdout.split("ROWS", 1)[1].split()[0])
    assert rows == pq.ParquetFile(run / "history" / "sends.parquet").metadata.num_rows == 2000


def test_check_of_a_bucket_on_local_spark_reads_through_s3a_with_the_local_verdicts(
        s3, s3a_ready, runs, local, server):  # noqa: F811
    upload(runs, s3)
    done = subprocess.run([str(BIN / "kafka-chaos"), "check", s3.url], env={**os.environ, **DRIVER},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == local[0], done.stdout + done.stderr
    got, checkers = outputs_bucket(s3)
    assert_same(got, local[1])
    assert {c.get("history_read") for c in checkers.values()} == {"s3a"}
    assert server.secret_key not in done.stdout + done.stderr


def test_check_of_a_bucket_on_a_standalone_cluster_gives_the_local_verdicts_its_executors_reading_s3a(
        s3, s3a_ready, runs, local, tmp_path):  # noqa: F811
    upload(runs, s3)
    cluster = Standalone(tmp_path / "spark", workers=2, cores=1, memory="2g").start()
    try:
        env = cluster.env(**DRIVER, PYSPARK_PYTHON=str(tmp_path / "no-python-on-executors"))
        done = subprocess.run([str(BIN / "kafka-chaos"), "check", s3.url, "--spark-master", cluster.url], env=env,
                              capture_output=True, text=True, timeout=900)
        status = cluster.idle()
    finally:
        cluster.stop()
    assert done.returncode == local[0], done.stdout + done.stderr
    got, checkers = outputs_bucket(s3)
    assert_same(got, local[1])
    assert {(c.get("spark_master"), c.get("history_read")) for c in checkers.values()} == {(cluster.url, "s3a")}
    assert [a["state"] for a in status["completedapps"]] == ["FINISHED"]
    # the executors' own logs: every history file they opened was the bucket's, none the driver's staged copy
    logs = "".join(e.read_text() for e in (tmp_path / "spark" / "work").glob("worker*/app-*/*/stderr"))
    opened = [line for line in logs.splitlines() if "Reading File path:" in line]
    assert opened and all(f"s3a://{s3.bucket}/{s3.prefix}/" in line for line in opened), opened[:3]
    deadline = time.monotonic() + 15                # the driver's JVM exits just after its Python
    while cluster.leftovers() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert cluster.leftovers() == []


def test_a_session_without_the_s3a_jars_reads_the_staged_copies_locally_and_refuses_on_a_cluster(s3a_ready):
    """A Spark session already running without s3a (a test's, a warm one): a local check reads the staged copies,
    with a warning, never an s3a path its JVM cannot open."""
    code = ("import logging; logging.basicConfig(); from pyspark.sql import SparkSession\n"
            "from kafka_chaos.checkers import s3a\n"
            "s = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()\n"
            "print('HAS', s3a.has_s3a(s)); spark, read = s3a.session(None, {'r': 's3://b/p/r'}); print('READ', read)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "HAS False" in done.stdout and "READ {}" in done.stdout
    assert "started without the s3a jars" in done.stderr
