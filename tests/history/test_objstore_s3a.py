"""Spark reading a run straight from the real local S3 server through s3a:// (checkers/s3a.py's jars and settings):
the same rows as the file on disk. Credentials only through the environment (the SDK's default chain)."""
from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from kafka_chaos.base.errors import EnvironmentProblem
from kafka_chaos.history import objstore
from kafka_chaos.history.synthetic import write_synthetic_run
from tests.history.test_objstore import s3, server  # noqa: F401  (the fixtures: one real server per module)

pytestmark = [pytest.mark.objstore, pytest.mark.spark]


def test_spark_reads_an_uploaded_run_through_s3a(s3, tmp_path):  # noqa: F811
    from kafka_chaos.checkers import s3a

    try:
        conf = s3a.s3a_conf()
    except EnvironmentProblem as e:
        pytest.skip(f"{e.cause}: {e.remedy}")
    assert not any("secret" in k.lower() or "access.key" in k.lower() for k in conf)
    run = write_synthetic_run(tmp_path / "r1", sends=2000, seed=3)
    objstore.upload_run(run, s3)
    url = f"s3a://{s3.bucket}/{s3.prefix}/r1/history/sends.parquet"
    code = ("import json, sys; from pyspark.sql import SparkSession; b = SparkSession.builder.master('local[1]')"
            ".config('spark.ui.enabled', 'false'); conf = json.loads(sys.argv[1])\n"
            "for k, v in conf.items(): b = b.config(k, v)\n"
            "s = b.getOrCreate(); print('ROWS', s.read.parquet(sys.argv[2]).count()); s.stop()")
    # its own process: a Spark session another test left in this one would not take the jars
    done = subprocess.run([sys.executable, "-c", code, json.dumps(conf), url], capture_output=True, text=True,
                          timeout=540)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = int(done.stdout.split("ROWS", 1)[1].split()[0])
    assert rows == pq.ParquetFile(run / "history" / "sends.parquet").metadata.num_rows == 2000
