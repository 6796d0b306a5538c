"""The session factory's settings (no JVM started): memory for 10M sends, local cores, adaptive execution."""
from kafka_chaos.checkers.spark.session import (
    DRIVER_MEMORY_ENV,
    LOCAL_MASTER,
    MASTER_ENV,
    resolve_master,
    session_config,
)


def test_the_driver_gets_8g_by_default_and_the_environment_can_change_it(monkeypatch):
    monkeypatch.delenv(DRIVER_MEMORY_ENV, raising=False)
    assert session_config(local=True)["spark.driver.memory"] == "8g"
    monkeypatch.setenv(DRIVER_MEMORY_ENV, "12g")
    assert session_config(local=True)["spark.driver.memory"] == "12g"


def test_local_mode_uses_every_core_and_adaptive_execution(monkeypatch):
    monkeypatch.delenv(MASTER_ENV, raising=False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert resolve_master() == LOCAL_MASTER == "local[*]"
    conf = session_config(local=True)
    assert conf["spark.sql.adaptive.enabled"] == "true" and conf["spark.ui.enabled"] == "false"


def test_spark_submit_keeps_its_own_master(monkeypatch):
    monkeypatch.delenv(MASTER_ENV, raising=False)
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1234")
    assert resolve_master() is None
    assert resolve_master("spark://h:7077") == "spark://h:7077"


def test_the_driver_listens_on_loopback_only_when_every_executor_is_on_this_machine():
    from kafka_chaos.checkers.spark.session import on_loopback
    assert on_loopback(None) and on_loopback("local[2]") and on_loopback("spark://127.0.0.1:7077")
    assert on_loopback("spark://localhost:7077,127.0.0.1:7078")              # a standalone HA pair, here
    assert not on_loopback("spark://10.0.0.5:7077") and not on_loopback("spark://127.0.0.1:7077,spark-m2:7077")
    assert not on_loopback("yarn") and not on_loopback("k8s://https://10.0.0.1:6443")
    here, remote = session_config(local=False, loopback=True), session_config(local=False, loopback=False)
    assert here["spark.driver.host"] == here["spark.driver.bindAddress"] == "127.0.0.1"
    assert "spark.driver.host" not in remote and "spark.driver.bindAddress" not in remote   # Spark's default
    assert session_config(local=True)["spark.driver.host"] == "127.0.0.1"


def test_under_spark_submit_its_driver_memory_stands():
    assert "spark.driver.memory" not in session_config(local=False, loopback=False, submitted=True)


def test_the_driver_gets_the_throughput_collector_unless_the_user_picked_one_or_switched_it_off(monkeypatch, tmp_path):
    from kafka_chaos.checkers.spark import cds as spark_cds
    from kafka_chaos.checkers.spark import session as spark

    for var in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "PYSPARK_SUBMIT_ARGS", "SPARK_DRIVER_OPTS",
                "SPARK_HOME", spark.GC_ENV, spark.JIT_ENV):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(spark_cds.DISABLE_ENV, "0")
    monkeypatch.setenv(spark.HEAP_ENV, "0")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert spark.default_java_options() == f"{spark.JIT_OPTIONS} {spark.GC_OPTIONS}"

    (tmp_path / "spark-defaults.conf").write_text("spark.driver.extraJavaOptions -Xss4m -XX:+UseG1GC\n")
    assert spark.GC_OPTIONS not in spark.default_java_options()       # two collectors: HotSpot would not start
    (tmp_path / "spark-defaults.conf").unlink()
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-XX:+UseZGC")
    assert spark.GC_OPTIONS not in spark.default_java_options()
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-XX:+UseGCOverheadLimit")     # a GC option, not a collector
    assert spark.GC_OPTIONS in spark.default_java_options()
    monkeypatch.setenv(spark.GC_ENV, "0")
    monkeypatch.setenv(spark.JIT_ENV, "0")
    assert spark.default_java_options() == ""


def test_the_throughput_collector_gets_a_young_generation_of_a_quarter_of_the_heap(monkeypatch, tmp_path):
    from kafka_chaos.checkers.spark import cds as spark_cds
    from kafka_chaos.checkers.spark import session as spark

    for var in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "PYSPARK_SUBMIT_ARGS", "SPARK_DRIVER_OPTS",
                "SPARK_HOME", spark.GC_ENV, spark.HEAP_ENV, spark.DRIVER_MEMORY_ENV):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(spark_cds.DISABLE_ENV, "0")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert f"-Xmn2048m {spark.METASPACE_OPTION}" in spark.default_java_options()      # of the default 8g
    monkeypatch.setenv(spark.DRIVER_MEMORY_ENV, "3g")           # the -Xmx Spark's launcher gives the JVM
    assert session_config(local=True)["spark.driver.memory"] == "3g"
    assert "-Xmn768m " in spark.default_java_options()
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-XX:+UseG1GC")    # the user's collector sizes its own generations
    assert "-Xmn" not in spark.default_java_options() and spark.GC_OPTIONS not in spark.default_java_options()
    monkeypatch.delenv("JAVA_TOOL_OPTIONS")
    for refused in ("3gb", "60m", "4096"):     # no size the JVM reads (Spark's -Xmx3gb fails alone), or too small
        monkeypatch.setenv(spark.DRIVER_MEMORY_ENV, refused)
        assert "-Xmn" not in spark.default_java_options()
    monkeypatch.setenv(spark.DRIVER_MEMORY_ENV, "3g")
    monkeypatch.setenv(spark.HEAP_ENV, "0")
    assert "-Xmn" not in spark.default_java_options() and spark.METASPACE_OPTION not in spark.default_java_options()


def test_adaptive_execution_never_coalesces_a_local_stage_into_fewer_tasks_than_cores(monkeypatch):
    from kafka_chaos.checkers.spark import session as spark

    for cores in (1, 2, 3, 8, 64):
        monkeypatch.setattr(spark, "local_cores", lambda: cores)
        conf = session_config(local=True)
        per_task = int(conf["spark.sql.adaptive.coalescePartitions.maxReducerPartitionsPerTask"])
        assert int(conf["spark.sql.shuffle.partitions"]) // per_task >= min(cores, 8), cores
    assert int(session_config(local=False)["spark.sql.adaptive.coalescePartitions.maxReducerPartitionsPerTask"]) \
        == 2**31 - 1                                   # a cluster's stages: coalesced by size alone, as Spark does
