"""The driver's class-data archive (checkers/spark/cds.py): named after the Java runtime and Spark's jars, used only
when it exists, and really mapped by a check's JVM, which also gets the check's JIT thresholds."""
import os
import subprocess
import sys
import textwrap

import pytest

from kafka_chaos.checkers.spark import cds as spark_cds
from kafka_chaos.checkers.spark.session import GC_OPTIONS, JIT_OPTIONS, driver_memory, heap_options


@pytest.fixture
def fake_runtime(tmp_path, monkeypatch):
    """A java and a jars folder of our own, and a cache of our own."""
    java = tmp_path / "jdk/bin/java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    (tmp_path / "jdk/lib/server").mkdir(parents=True)
    (tmp_path / "jdk/lib/server/libjvm.so").write_bytes(b"jvm")
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-core.jar").write_bytes(b"core")
    monkeypatch.setattr(spark_cds, "_java", lambda: java)
    monkeypatch.setattr(spark_cds, "_spark_jars", lambda: jars)
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(spark_cds.DISABLE_ENV, raising=False)
    return java, jars


def test_no_archive_means_no_option(fake_runtime):
    assert not spark_cds.archive_path().exists()
    assert spark_cds.driver_java_options() is None


def test_an_archive_in_place_is_mapped_quietly_unless_turned_off(fake_runtime, monkeypatch):
    path = spark_cds.archive_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    assert spark_cds.driver_java_options() == f"-XX:SharedArchiveFile={path} -Xlog:cds=off,cds+dynamic=off"
    monkeypatch.setenv(spark_cds.DISABLE_ENV, "0")
    assert spark_cds.driver_java_options() is None


def test_another_jar_set_or_jvm_needs_another_archive(fake_runtime):
    java, jars = fake_runtime
    first = spark_cds.archive_path()
    (jars / "spark-sql.jar").write_bytes(b"sql")
    second = spark_cds.archive_path()
    (java.parent.parent / "lib/server/libjvm.so").write_bytes(b"another jvm build")
    third = spark_cds.archive_path()
    assert len({first, second, third}) == 3 and first.parent == second.parent == third.parent


def test_without_java_there_is_no_archive(monkeypatch):
    monkeypatch.setattr(spark_cds, "_java", lambda: None)
    assert spark_cds.archive_path() is None and spark_cds.driver_java_options() is None


def test_mapping_an_archive_marks_it_used_so_the_cache_evicts_by_last_use(fake_runtime):
    path = spark_cds.archive_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    os.utime(path, (1000, 1000))
    spark_cds.driver_java_options()
    assert path.stat().st_mtime > 1000


def test_archives_of_deleted_checkouts_go_first_then_the_least_recently_used(tmp_path):
    kept_jars = tmp_path / "venv/jars"
    kept_jars.mkdir(parents=True)
    cache = tmp_path / "cache"
    cache.mkdir()
    for i in range(6):
        (cache / f"driver-{i}.jsa").write_bytes(b"a")
        os.utime(cache / f"driver-{i}.jsa", (1000 + i, 1000 + i))
        (cache / f"driver-{i}.jars").write_text(str(kept_jars if i != 4 else tmp_path / "deleted-clone/jars"))
    removed = spark_cds.prune(cache, keep=3)
    assert sorted(p.name for p in removed) == ["driver-0.jsa", "driver-1.jsa", "driver-4.jsa"]
    assert sorted(p.name for p in cache.iterdir()) == ["driver-2.jars", "driver-2.jsa", "driver-3.jars",
                                                       "driver-3.jsa", "driver-5.jars", "driver-5.jsa"]


def test_the_cache_keeps_the_newest_archives_and_drops_abandoned_partial_ones(tmp_path):
    for i in range(6):
        (tmp_path / f"driver-{i}.jsa").write_bytes(b"a")
        os.utime(tmp_path / f"driver-{i}.jsa", (1000 + i, 1000 + i))
    (tmp_path / "driver-x.123.partial").write_bytes(b"p")
    os.utime(tmp_path / "driver-x.123.partial", (1000, 1000))
    (tmp_path / "driver-y.456.partial").write_bytes(b"p")          # a training writing now
    spark_cds.prune(tmp_path, keep=4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["driver-2.jsa", "driver-3.jsa", "driver-4.jsa",
                                                          "driver-5.jsa", "driver-y.456.partial"]


@pytest.mark.spark
def test_a_checks_jvm_maps_the_trained_archive_quietly_and_runs_with_the_jit_thresholds_and_collector():
    """Trains the archive if set-up has not (about 45 s), then starts a session in a fresh process the way a check
    does and reads the JVM's memory map."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_GATEWAY_PORT", spark_cds.DISABLE_ENV,
                                                            "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS")}
    trained = subprocess.run([sys.executable, "-m", "kafka_chaos.checkers.spark.cds"], capture_output=True,
                             text=True, timeout=600, env=env)     # its own process: this one may run a session
    assert trained.returncode == 0, trained.stderr[-2000:]
    archive = spark_cds.archive_path()
    assert archive.is_file() and archive.stat().st_size > 10 * 2**20, trained.stdout + trained.stderr[-2000:]
    probe = textwrap.dedent("""
        from pyspark import SparkContext
        from kafka_chaos.checkers.spark import get_spark
        spark = get_spark()
        assert spark.range(10).count() == 10
        pid = SparkContext._gateway.proc.pid
        print("MAPS", pid, open(f"/proc/{pid}/maps").read().count(%r))
        print("CMDLINE", open(f"/proc/{pid}/cmdline").read().replace(chr(0), " "))
    """ % str(archive))
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    mapped = int(out.stdout.split("MAPS", 1)[1].split()[1])
    assert mapped > 0, "the JVM did not map the archive"
    assert "[cds" not in out.stdout + out.stderr
    cmdline = out.stdout.split("CMDLINE", 1)[1]
    assert JIT_OPTIONS in cmdline, "the driver JVM runs without the check's JIT thresholds"
    assert GC_OPTIONS in cmdline, "the driver JVM runs without the check's collector"
    assert heap_options(driver_memory()) in cmdline, "the driver JVM's heap does not start at its full size"
