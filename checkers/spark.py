"""The one SparkSession factory of the project: every checker job gets its session here.

Local by default (`local[*]`, tuned for a 2-core machine); `--spark-master URL` or KAFKA_CHAOS_SPARK_MASTER runs the
same job on a cluster. The master is never hard-coded when spark-submit launched us, so its --master wins.
Driver memory only takes effect before the JVM starts, i.e. on the first session of a process.
"""
from __future__ import annotations

import logging
import os
import sys

log = logging.getLogger(__name__)

MASTER_ENV = "KAFKA_CHAOS_SPARK_MASTER"
DRIVER_MEMORY_ENV = "KAFKA_CHAOS_SPARK_DRIVER_MEMORY"
DEFAULT_DRIVER_MEMORY = "4g"
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
    builder = (SparkSession.builder.appName(app_name)
               .config("spark.driver.memory", os.environ.get(DRIVER_MEMORY_ENV, DEFAULT_DRIVER_MEMORY))
               .config("spark.sql.shuffle.partitions", "8" if local else "64")
               .config("spark.sql.adaptive.enabled", "true")
               .config("spark.sql.adaptive.coalescePartitions.enabled", "true")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    if local:
        builder = (builder.config("spark.driver.bindAddress", "127.0.0.1")
                   .config("spark.driver.host", "127.0.0.1"))
    if resolved is not None:
        builder = builder.master(resolved)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
