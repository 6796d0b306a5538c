"""The one SparkSession factory of the project: every checker job gets its session here.

Local by default (`local[*]`: every core of the machine, 2 on ours); `--spark-master URL` or KAFKA_CHAOS_SPARK_MASTER
runs the same job on a cluster. The master is never hard-coded when spark-submit launched us, so its --master wins.
Driver memory only takes effect before the JVM starts, i.e. on the first session of a process; in local mode the
driver is also the only executor, so it holds every shuffle's hash maps (10M sends need several GiB, 100M spill).
"""
from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger(__name__)

MASTER_ENV = "KAFKA_CHAOS_SPARK_MASTER"
DRIVER_MEMORY_ENV = "KAFKA_CHAOS_SPARK_DRIVER_MEMORY"
EVENT_LOG_ENV = "KAFKA_CHAOS_SPARK_EVENT_LOG"       # a directory: write Spark's event log there (profiling)
DEFAULT_DRIVER_MEMORY = "8g"
LOCAL_MASTER = "local[*]"


def resolve_master(explicit: str | None = None) -> str | None:
    """The master to set, or None when spark-submit already chose one."""
    if explicit:
        return explicit
    if os.environ.get(MASTER_ENV):
        return os.environ[MASTER_ENV]
    if "PYSPARK_GATEWAY_PORT" in os.environ:      # launched by spark-submit / pyspark shell
        return None
    return LOCAL_MASTER


def session_config(local: bool) -> dict[str, str]:
    """The settings of a checker session. Why each one matters is next to it."""
    conf = {
        "spark.driver.memory": os.environ.get(DRIVER_MEMORY_ENV, DEFAULT_DRIVER_MEMORY),
        # The finder sizes its own big exchanges; this is for the small ones (windows over a few series,
        # summaries), which AQE then coalesces by size rather than by core count.
        "spark.sql.shuffle.partitions": "8" if local else "64",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
        # A broadcast side may be the result of a long window job on 100M sends.
        "spark.sql.broadcastTimeout": "3600",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }
    if os.environ.get(EVENT_LOG_ENV):
        conf |= {"spark.eventLog.enabled": "true", "spark.eventLog.dir": os.environ[EVENT_LOG_ENV],
                 "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"}
    if local:
        conf |= {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}
    return conf


def get_spark(master: str | None = None, app_name: str = "kafka-chaos-check"):
    """Return this process's SparkSession, creating it on first use."""
    from pyspark.sql import SparkSession

    resolved = resolve_master(master)
    active = SparkSession.getActiveSession()
    if active is not None:
        current = active.sparkContext.master
        if resolved and resolved != current and resolved != LOCAL_MASTER:
            log.warning("a Spark session on %s already runs in this process; %s is ignored", current, resolved)
        return active

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    local = resolved is None or resolved.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(app_name)
    for key, value in session_config(local).items():
        builder = builder.config(key, value)
    if resolved is not None:
        builder = builder.master(resolved)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    # The finder submits queries from a few threads; each closes its own py4j connection at exit, at INFO.
    logging.getLogger("py4j.clientserver").setLevel(logging.WARNING)
    return spark
