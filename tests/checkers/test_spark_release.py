"""A one-shot check ends the Spark JVM it started once the scans are back; a session already running is kept.

Each case runs in a process of its own, so the tests' shared session is not the one ended."""
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark

SCRIPT = """
import json, sys, time
from pathlib import Path
from pyspark import SparkContext
from kafka_chaos.checkers.check import check_many
from kafka_chaos.checkers.spark import get_spark, session
from kafka_chaos.history.synthetic import write_synthetic_run

ended = []                                  # the JVM processes `release` was asked to end
release = session.release
def spy(spark, *args):
    ended.append(SparkContext._gateway.proc)
    release(spark, *args)
session.release = spy

run = write_synthetic_run(Path(sys.argv[1]) / "run", sends=2000, seed=3)
warm = get_spark() if sys.argv[2] == "warm" else None
code = check_many([run], force=True)
deadline = time.monotonic() + 30
while ended and ended[0].poll() is None and time.monotonic() < deadline:
    time.sleep(0.1)
gateway = SparkContext._gateway
print(json.dumps({"code": code, "verdict": (run / "verdict.json").exists(), "ended": len(ended),
                  "jvm_exited": bool(ended) and ended[0].poll() is not None,
                  "jvm_alive": gateway is not None and gateway.proc.poll() is None,
                  "active": SparkContext._active_spark_context is not None}), file=sys.stderr)
"""


def _check_in_a_process(tmp_path, mode: str) -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), mode], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_a_one_shot_check_ends_the_jvm_it_started(tmp_path):
    out = _check_in_a_process(tmp_path, "cold")
    assert out == {"code": 0, "verdict": True, "ended": 1, "jvm_exited": True, "jvm_alive": False, "active": False}


def test_a_check_in_a_warm_session_keeps_it(tmp_path):
    out = _check_in_a_process(tmp_path, "warm")
    assert out == {"code": 0, "verdict": True, "ended": 0, "jvm_exited": False, "jvm_alive": True, "active": True}
