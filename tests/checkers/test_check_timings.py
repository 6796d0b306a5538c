"""Phase timings in verdict.json and `check -v`, and a check's terminal free of Spark's start-up lines."""
import io
import json
import logging
import os
import subprocess
import sys

import pytest

from kafka_chaos.checkers.spark import quiet as spark_quiet
from kafka_chaos.checkers.timings import OVERLAPPING, PHASES
from kafka_chaos.harness.cli import configure_logging, main
from kafka_chaos.history.synthetic import write_synthetic_run
from tests.schemas import validate

START_UP = ("Using incubator modules", "Using Spark's default log4j profile", "NativeCodeLoader")


def assert_timings(verdict: dict) -> dict:
    t = verdict["timings"]
    phases = t["phases"]
    assert set(phases) == set(PHASES) and t["overlapping"] == list(OVERLAPPING)
    assert all(isinstance(s, (int, float)) and s >= 0 for s in phases.values())
    assert sum(s for p, s in phases.items() if p not in OVERLAPPING) <= t["wall_s"]
    assert all(phases[p] <= t["wall_s"] for p in OVERLAPPING)
    validate(verdict, "verdict")
    return phases


def test_the_pandas_engine_writes_its_phases_and_logs_them_with_v(tmp_path, caplog):
    run = write_synthetic_run(tmp_path / "run", sends=800, seed=3)
    with caplog.at_level("DEBUG", logger="kafka_chaos"):
        assert main(["check", str(run), "--engine", "pandas", "-v"]) == 0
    phases = assert_timings(json.loads((run / "verdict.json").read_text()))
    assert phases["spark_start"] == 0 and phases["scans"] > 0 and phases["model"] > 0
    lines = [r.getMessage() for r in caplog.records if "phases:" in r.getMessage()]
    assert len(lines) == 1 and lines[0].startswith("run: phases: Spark start 0.00 s, scans ")


def test_the_jvm_s_start_up_lines_are_dropped_and_the_rest_passes(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    jvm = io.BytesIO(b"WARNING: Using incubator modules: jdk.incubator.vector\n"
                     b"Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties\n"
                     b"26/01/02 10:00:00 WARN NativeCodeLoader: Unable to load native-hadoop library for your "
                     b"platform... using builtin-java classes where applicable\n"
                     b"Setting default log level to \"WARN\".\n"
                     b"Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space\n")
    spark_quiet._forward(jvm)
    assert out.getvalue() == "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space\n"


def test_the_terminal_shows_kafka_chaos_s_debug_lines_and_a_library_s_only_from_warning_up(monkeypatch):
    """py4j logs a retried command's traceback at INFO on the root logger (its finalizer thread sending a
    garbage-collection command while the one-shot check ends the JVM): a CI run once showed it under -v."""
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", root.level)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    configure_logging(verbose=True)
    logging.getLogger("kafka_chaos.checkers.outputs").debug("run: phases: Spark start 2.07 s")
    logging.getLogger("kafka-chaos").info("progress")
    logging.info("Exception while sending command.")            # py4j's own call, on the root logger
    logging.getLogger("py4j.clientserver").info("Closing down clientserver connection")
    logging.getLogger("urllib3").warning("a library's warning")
    logging.getLogger("pyspark").error("a library's error")
    assert [line.split(" ", 1)[1] for line in out.getvalue().splitlines()] == [
        "DEBUG kafka_chaos.checkers.outputs: run: phases: Spark start 2.07 s", "INFO kafka-chaos: progress",
        "WARNING urllib3: a library's warning", "ERROR pyspark: a library's error"]


@pytest.mark.spark
def test_a_spark_check_shows_its_phases_with_v_and_no_spark_or_py4j_chatter(tmp_path):
    """A real `kafka-chaos check -v` in its own process, so that it starts its own JVM."""
    run = write_synthetic_run(tmp_path / "run", sends=1500, seed=2)
    done = subprocess.run([sys.executable, "-m", "kafka_chaos.harness.cli", "check", "-v", str(run)],
                          capture_output=True, text=True, timeout=600, env=os.environ | {"PYTHONUNBUFFERED": "1"})
    assert done.returncode == 0, done.stderr
    phases = assert_timings(json.loads((run / "verdict.json").read_text()))
    assert phases["spark_start"] > 0 and phases["scans"] > 0
    assert [line for line in done.stderr.splitlines() if "run: phases: Spark start " in line]
    assert "py4j" not in done.stderr.lower()
    for line in START_UP:
        assert line not in done.stderr and line not in done.stdout
