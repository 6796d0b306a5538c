"""Spark's driver JVM started without its start-up chatter on the terminal.

A check's terminal (and a run's live display, beside which the session warms up) should carry kafka-chaos's lines,
not Spark's. Two sources: Spark's log4j default profile (it announces itself, then Hadoop's NativeCodeLoader warns),
silenced at the source by LOG4J2_FILE; and the JVM itself, which prints "WARNING: Using incubator modules:
jdk.incubator.vector" straight to its stderr when Spark's launcher adds that module (no logging framework involved,
so no setting turns it off). So the JVM is launched here with its stderr on a pipe, and a thread copies every line to
our stderr except START_UP_LINES: anything else the JVM prints (an error, a crash) still reaches the user.
"""
from __future__ import annotations

import os
import re
import sys
import threading
from pathlib import Path

LOG4J2_FILE = Path(__file__).with_name("spark_log4j2.properties")
LOG4J2_OPTION = f"-Dlog4j2.configurationFile=file:{LOG4J2_FILE}"
START_UP_LINES = re.compile(
    r"^(WARNING: Using incubator modules: |Using Spark's default log4j profile: |Setting default log level to |"
    r"To adjust logging level use sc\.setLogLevel\(|.*WARN NativeCodeLoader: Unable to load native-hadoop library)")


def is_start_up_line(line: str) -> bool:
    return bool(START_UP_LINES.match(line))


def launch(conf: dict[str, str]) -> None:
    """Start this process's Spark JVM with `conf` (the session's settings: the launcher needs the driver's options
    on its command line), its stderr through `_forward`. Nothing happens when a JVM is already there."""
    from pyspark import SparkConf
    from pyspark.core.context import SparkContext
    from pyspark.java_gateway import launch_gateway

    with SparkContext._lock:
        if SparkContext._gateway is not None:
            return
        spark_conf = SparkConf()
        for key, value in conf.items():
            spark_conf.set(key, value)
        # Our own pipe, read from before the launch: a JVM that fails to start still gets its last words out.
        read_end, write_end = os.pipe()
        threading.Thread(target=_forward, args=(os.fdopen(read_end, "rb"),), name="spark-stderr", daemon=True).start()
        try:
            gateway = launch_gateway(spark_conf, popen_kwargs={"stderr": write_end})
        finally:
            os.close(write_end)                 # the JVM holds its copy; the copier ends when the JVM does
        SparkContext._ensure_initialized(gateway=gateway)


def _forward(stream) -> None:
    """Copy the JVM's stderr to ours, line by line, without the start-up lines; ends when the JVM exits."""
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace")
        if is_start_up_line(line):
            continue
        try:
            sys.stderr.write(line)
            sys.stderr.flush()
        except (ValueError, OSError):          # our stderr closed (interpreter exit): the JVM goes with us
            return
