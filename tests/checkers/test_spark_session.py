"""The session factory's settings (no JVM started): memory for 10M sends, local cores, adaptive execution."""
from kafka_chaos.checkers.spark import DRIVER_MEMORY_ENV, LOCAL_MASTER, MASTER_ENV, resolve_master, session_config


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
