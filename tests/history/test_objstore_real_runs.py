"""Many runners, one check, on the stored real runs (KAFKA_CHAOS_REAL_RUNS, by default /work/realruns/r; where the
machine has none, the run shipped in tests/data): copies uploaded into one prefix of the real local S3 server,
`check s3://bucket/suite --force` on a standalone Spark cluster (its executors reading the bucket through s3a)
re-checks them all in one job, with exactly the verdicts and anomaly rows of a local check of the same copies (local
Spark, the same code) and each run's stored outcome (valid or not, violations, anomaly counts, send and read counts:
the stored verdict.json files were written by an earlier checker, whose wording, newer kinds and model fixes
differ); then `report --suite s3://...` writes the suite's index beside them."""
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

from kafka_chaos.history import objstore
from tests.chaos.shipped_run import real_runs_root
from tests.checkers.spark_standalone import Standalone
from tests.checkers.test_spark_cluster import DRIVER
from tests.history.test_objstore import s3, server  # noqa: F401  (the fixtures: one real server per module)
from tests.history.test_objstore_s3a import IGNORE, s3a_ready  # noqa: F401

pytestmark = [pytest.mark.objstore, pytest.mark.spark]
BIN = Path(sys.executable).parent


def stored_runs(tmp: Path) -> list[Path]:
    """The machine's stored real runs, else the one shipped in tests/data (a copy)."""
    where = real_runs_root(tmp)
    return sorted(p for p in where.iterdir() if (p / "verdict.json").is_file()) if where.is_dir() else []


def outcome(verdict: dict) -> tuple:
    """What a verdict decides: the anomaly counts of the kinds the stored verdicts know (newer kinds count 0)."""
    counts = {k: n for k, n in (verdict.get("anomalies") or {}).items() if n}
    return verdict["valid"], verdict["status"], verdict.get("violations"), counts, verdict.get("counts")


def test_the_stored_real_runs_rechecked_from_one_bucket_in_one_job_keep_their_verdicts(s3, s3a_ready,  # noqa: F811
                                                                                        tmp_path):
    runs = stored_runs(tmp_path / "stored")
    assert runs, "no real runs: neither KAFKA_CHAOS_REAL_RUNS nor the shipped tests/data/real-runs"
    copies = tmp_path / "copies"                     # the stored runs are read, never written
    for run in runs:
        shutil.copytree(run, copies / run.name)
    suite = s3.child("suite")
    up = subprocess.run([str(BIN / "kafka-chaos"), "upload", str(copies), suite.url], capture_output=True,
                        text=True, timeout=900)
    assert up.returncode == 0 and f"{len(runs)} run(s) uploaded" in up.stdout, up.stdout + up.stderr
    here = subprocess.run([str(BIN / "kafka-chaos"), "check", str(copies), "--force"], env={**os.environ, **DRIVER},
                          capture_output=True, text=True, timeout=1800)
    assert here.returncode in (0, 1), here.stdout + here.stderr

    cluster = Standalone(tmp_path / "spark", workers=2, cores=1, memory="2g").start()
    try:
        env = cluster.env(**DRIVER, PYSPARK_PYTHON=str(tmp_path / "no-python-on-executors"))
        started = time.monotonic()
        done = subprocess.run([str(BIN / "kafka-chaos"), "check", suite.url + "/", "--force", "--spark-master",
                               cluster.url, "-v"], env=env, capture_output=True, text=True, timeout=1800)
        took = time.monotonic() - started
        status = cluster.idle()
    finally:
        cluster.stop()
    print(f"check of {len(runs)} runs from the bucket on the standalone cluster: {took:.1f} s")
    stored = {r.name: json.loads((r / "verdict.json").read_text()) for r in runs}
    assert done.returncode == here.returncode == (0 if all(v["valid"] for v in stored.values()) else 1), \
        done.stdout + done.stderr
    assert len(status["completedapps"]) == 1                          # one job, one application
    apps = set()
    for run in runs:
        got = json.loads(objstore.read_bytes(suite, run.name, "verdict.json"))
        apps.add((got["checker"]["spark_application_id"], got["checker"].get("history_read")))
        want = json.loads((copies / run.name / "verdict.json").read_text())
        assert {k: v for k, v in got.items() if k not in IGNORE} == \
            {k: v for k, v in want.items() if k not in IGNORE}, run.name
        rows = pq.read_table(pa.BufferReader(objstore.read_bytes(suite, run.name, "anomalies.parquet")))
        assert rows.equals(pq.read_table(copies / run.name / "anomalies.parquet")), run.name
        assert outcome(got) == outcome(stored[run.name]), run.name
        kinds = [sorted(d.get("kind") for d in v.get("model_disagreements") or []) for v in (stored[run.name], got)]
        print(f"{run.name}: {got['status']}, lost {got['anomalies'].get('lost')}, disagreements stored "
              f"{kinds[0]}, now {kinds[1]}")
    assert len(apps) == 1 and {s for _, s in apps} == {"s3a"}

    page = subprocess.run([str(BIN / "kafka-chaos"), "report", "--suite", suite.url], capture_output=True,
                          text=True, timeout=1800)
    assert page.returncode == 0, page.stdout + page.stderr
    index = objstore.read_bytes(suite, "index.html").decode()
    assert all(f'href="{run.name}/report.html"' in index for run in runs)
    assert all(objstore.read_bytes(suite, run.name, "report.html").startswith(b"<!DOCTYPE html>") for run in runs)
    assert os.environ["AWS_SECRET_ACCESS_KEY"] not in index
