"""The one SparkSession factory of the project: every checker job gets its session here.

Local by default (`local[*]`: every core of the machine, 2 on ours); `--spark-master URL` or KAFKA_CHAOS_SPARK_MASTER
runs the same job on a cluster. The master is never hard-coded when spark-submit launched us, so its --master wins.
Driver memory only takes effect before the JVM starts, i.e. on the first session of a process; in local mode the
driver is also the only executor, so it holds every shuffle's hash maps (10M sends need several GiB, 100M spill).

The driver binds to loopback only when every executor is on this machine (local mode, or a master listening on
loopback); a remote cluster's executors must reach the driver at its routable address, which is Spark's default
(or spark.driver.host from spark-defaults.conf / spark-submit --conf). Executors run no Python of ours: every query
is a DataFrame plan, and the small key tables go in through Arrow (checkers.spark.queries.small_frame).
"""
from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from kafka_chaos.checkers.spark import quiet as spark_quiet

log = logging.getLogger(__name__)

MASTER_ENV = "KAFKA_CHAOS_SPARK_MASTER"
DRIVER_MEMORY_ENV = "KAFKA_CHAOS_SPARK_DRIVER_MEMORY"
JIT_ENV = "KAFKA_CHAOS_SPARK_JIT"                   # "0": HotSpot's default JIT thresholds (see JIT_OPTIONS)
EVENT_LOG_ENV = "KAFKA_CHAOS_SPARK_EVENT_LOG"       # a directory: write Spark's event log there (profiling)
DEFAULT_DRIVER_MEMORY = "8g"
LOCAL_MASTER = "local[*]"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "[::1]"}
POOLS_FILE = Path(__file__).with_name("spark_pools.xml")     # the fair scheduler's pools: "critical", "default"
# A check's JVM lives for one check, and its C2 compiler competes with the tasks for the cores: with HotSpot's default
# tier-4 thresholds, C2 took 30-45 CPU-s of the 10M check's anomaly pass, a third of the JVM's CPU. Thirty times those
# thresholds leave C2 the hottest methods only; steady-state code is the same, reached a little later (README,
# "Measured figures": C2 15-16 CPU-s, the pass 4-36% shorter than with the defaults in the same round).
JIT_OPTIONS = ("-XX:Tier4InvocationThreshold=150000 -XX:Tier4CompileThreshold=450000 "
               "-XX:Tier4BackEdgeThreshold=1200000")
# The check is a batch job: the throughput collector suits it better than G1, whose write barriers and concurrent
# threads cost the tasks CPU (10M check, alternating: anomaly pass 33.5-36.1 s with G1, 31.8-33.6 s with this; README).
GC_ENV = "KAFKA_CHAOS_SPARK_GC"                     # "0": the JVM's default collector
GC_OPTIONS = "-XX:+UseParallelGC"
# A young generation of a quarter of the heap from the start, and room for Spark's classes before the first metadata
# collection. Grown from HotSpot's 1/64 of RAM, the young generation stayed small while the heap grew: the 10M check's
# pass paused 29-33 times for 1.5-1.8 s in all (three full collections on "Ergonomics", each 0.12-0.17 s, with both
# cores stopped), and start-up paused four times on "Metadata GC Threshold", full collections on the session's
# single-threaded path. With a 2 GiB young generation: 12 pauses, 1.0 s. The whole heap from the start (-Xms) paused
# as little but took the 100M check's tree from 7.3 to 11.0 GiB (README, "Measured figures").
HEAP_ENV = "KAFKA_CHAOS_SPARK_HEAP"                 # "0": the JVM's own heap sizing
METASPACE_OPTION = "-XX:MetaspaceSize=256m"
USER_GC = re.compile(r"-XX:\+Use\w*GC\b")        # a collector the user chose: two would stop the JVM from starting


def resolve_master(explicit: str | None = None) -> str | None:
    """The master to set, or None when spark-submit already chose one."""
    if explicit:
        return explicit
    if os.environ.get(MASTER_ENV):
        return os.environ[MASTER_ENV]
    if "PYSPARK_GATEWAY_PORT" in os.environ:      # launched by spark-submit / pyspark shell
        return None
    return LOCAL_MASTER


def on_loopback(master: str | None) -> bool:
    """Whether every executor of `master` runs on this machine: local mode, or a standalone master (one, or an HA
    list) listening on loopback, which no other machine's worker can reach."""
    if master is None or master.startswith("local"):
        return True
    if not master.startswith("spark://"):
        return False                                  # yarn, k8s://...: executors elsewhere
    hosts = [h.rsplit(":", 1)[0] for h in master.removeprefix("spark://").split(",")]
    return all(h in LOOPBACK_HOSTS for h in hosts)


def session_config(local: bool, loopback: bool | None = None, submitted: bool = False) -> dict[str, str]:
    """The settings of a checker session. Why each one matters is next to it.

    loopback: every executor is on this machine (default: `local`), so the driver listens on 127.0.0.1 only.
    submitted: spark-submit started the driver's JVM, so its own --driver-memory already decided the heap.
    """
    conf = {} if submitted else {"spark.driver.memory": driver_memory()}
    conf |= {
        # The finder sizes its own big exchanges; this is for the small ones (windows over a few series,
        # summaries), which AQE then coalesces by size rather than by core count.
        "spark.sql.shuffle.partitions": "8" if local else "64",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.enabled": "true",
        "spark.sql.adaptive.coalescePartitions.parallelismFirst": "false",
        # ...but never into fewer tasks than cores: one coalesced task of a few MB (the availability buckets' final
        # aggregation on 10M sends, 2.4 s) ran alone at the end of the pass while the other core idled.
        "spark.sql.adaptive.coalescePartitions.maxReducerPartitionsPerTask": str(max(1, 8 // local_cores()))
        if local else "2147483647",
        # A broadcast side may be the result of a long window job on 100M sends.
        "spark.sql.broadcastTimeout": "3600",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # The longest chain of jobs first (spark_pools.xml); FIFO would queue its later stages behind every job
        # submitted while its first stage ran.
        "spark.scheduler.mode": "FAIR",
        "spark.scheduler.allocation.file": str(POOLS_FILE),
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }
    if os.environ.get(EVENT_LOG_ENV):
        conf |= {"spark.eventLog.enabled": "true", "spark.eventLog.dir": os.environ[EVENT_LOG_ENV],
                 "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"}
    if local if loopback is None else loopback:
        conf |= {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}
    return conf


def submitted_master() -> str | None:
    """The master spark-submit was given, read from its JVM (connecting to it starts nothing). It must be known
    before the session exists: the driver's address is fixed when the context starts."""
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return SparkConf().get("spark.master", None)


def local_cores() -> int:
    """The cores `local[*]` gets: the ones this process may run on (a `taskset` narrows them)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def user_chose_gc(environ=os.environ) -> bool:
    """Whether the user already picks the driver JVM's collector (JVM option variables, PYSPARK_SUBMIT_ARGS or
    spark-defaults.conf): then GC_OPTIONS stays out, since HotSpot refuses to start with two collectors."""
    texts = [environ.get(k, "") for k in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS",
                                          "PYSPARK_SUBMIT_ARGS", "SPARK_DRIVER_OPTS")]
    for conf_dir in filter(None, (environ.get("SPARK_CONF_DIR"),
                                  environ.get("SPARK_HOME") and str(Path(environ["SPARK_HOME"]) / "conf"))):
        defaults = Path(conf_dir) / "spark-defaults.conf"
        if defaults.is_file():
            texts.append(defaults.read_text(errors="replace"))
    return any(USER_GC.search(t) for t in texts)


def default_java_options() -> str:
    """Our driver JVM's options: JIT_OPTIONS, GC_OPTIONS and `heap_options` unless switched off (GC_OPTIONS and
    `heap_options`, which sizes its generations, also when the user already chose a collector), and the class-data
    archive of checkers.spark.cds if there is one."""
    from kafka_chaos.checkers.spark import cds as spark_cds

    jit = JIT_OPTIONS if os.environ.get(JIT_ENV) != "0" else None
    gc = GC_OPTIONS if os.environ.get(GC_ENV) != "0" and not user_chose_gc() else None
    heap = heap_options(driver_memory()) if gc and os.environ.get(HEAP_ENV) != "0" else None    # sized for it
    return " ".join(filter(None, (jit, gc, heap, spark_cds.driver_java_options())))


def driver_memory() -> str:
    return os.environ.get(DRIVER_MEMORY_ENV, DEFAULT_DRIVER_MEMORY)


JVM_SIZE = re.compile(r"(\d+)([kmgt]?)", re.IGNORECASE)
JVM_UNIT_MIB = {"": 2 ** -20, "k": 2 ** -10, "m": 1, "g": 2 ** 10, "t": 2 ** 20}
YOUNG_SHARE = 4                  # the young generation: a quarter of the heap


def heap_options(memory: str) -> str | None:
    """-Xmn at a quarter of spark.driver.memory, which Spark's launcher passes to the JVM as -Xmx unchanged (so in
    the JVM's own size syntax: a bare number is bytes), and METASPACE_OPTION; None for a size the JVM will refuse
    anyway, or a heap too small to split."""
    m = JVM_SIZE.fullmatch(memory)
    young = int(int(m.group(1)) * JVM_UNIT_MIB[m.group(2).lower()]) // YOUNG_SHARE if m else 0
    return f"-Xmn{young}m {METASPACE_OPTION}" if young >= 16 else None


def get_spark(master: str | None = None, app_name: str = "kafka-chaos-check", java_options: str | None = None,
              extra_conf: dict[str, str] | None = None):
    """Return this process's SparkSession, creating it on first use.

    extra_conf: more settings for a session this call starts (checkers.s3a's jars and s3a settings); a session
    already running keeps its own.

    java_options: the driver JVM's options when this call starts it (default: `default_java_options`). They go in
    spark.driver.defaultJavaOptions, so a user's spark.driver.extraJavaOptions still applies after them. Executors
    of a cluster are long-lived: left alone.
    """
    from pyspark.sql import SparkSession

    resolved = resolve_master(master)
    active = SparkSession.getActiveSession()
    if active is not None:
        current = active.sparkContext.master
        if resolved and resolved != current and resolved != LOCAL_MASTER:
            log.warning("a Spark session on %s already runs in this process; %s is ignored", current, resolved)
        return active

    # The finder submits queries from a few threads; each closes its own py4j connection at exit, at INFO, and
    # py4j's DEBUG is its protocol, a line per call: neither is ours to show (`-v` is kafka-chaos's debug lines).
    logging.getLogger("py4j").setLevel(logging.WARNING)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    submitted = resolved is None
    effective = submitted_master() if submitted else resolved
    local = effective is None or effective.startswith("local")
    loopback = on_loopback(effective)
    if loopback:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = {"spark.app.name": app_name} | session_config(local, loopback, submitted) | (extra_conf or {})
    if not submitted:       # our JVM: Spark's start-up lines stay off the terminal (checkers.spark.quiet)
        conf["spark.driver.defaultJavaOptions"] = " ".join(
            filter(None, (java_options or default_java_options(), spark_quiet.LOG4J2_OPTION)))
    if resolved is not None:
        conf["spark.master"] = resolved
        spark_quiet.launch(conf)
    spark = SparkSession.builder.config(map=conf).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def ender(wanted: bool = True):
    """For a check about to get its session: a function of that session that ends it (`release`) when `wanted` and
    no session was running before (a one-shot check started it), else one that leaves it be."""
    return release if wanted and not running() else (lambda spark: None)


def running() -> bool:
    """Whether this process already has a Spark context (a test's, a warm `run --repeat` one), from any thread:
    SparkSession.getActiveSession() is per thread, and the check asks from its worker thread."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


def release(spark, timeout_s: float = 30.0) -> None:
    """Stop `spark` and end the JVM this process launched for it, so its heap goes back to the machine.

    For a one-shot check (`kafka-chaos check`): once the scans are back nothing more runs on Spark, and judging an
    anomaly-dense 100M history (7M instances in pandas) beside the JVM's grown heap took the process tree to 16.75
    GiB. PySpark's stop() leaves the JVM running until Python exits; closing its stdin is how PySpark itself lets it
    know its parent is gone. A JVM that launched us (spark-submit, PYSPARK_GATEWAY_PORT) is left alone."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    proc = getattr(gateway, "proc", None)
    if proc is None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    gateway.shutdown()
    SparkContext._gateway = SparkContext._jvm = None     # a later get_spark launches a new one
    if proc.stdin:
        proc.stdin.close()
    # The JVM's exit (its shutdown hooks delete the shuffle files) takes ~1.2 s on 10M sends: waited for beside the
    # check's last steps, not before them.
    threading.Thread(target=_reap, args=(proc, timeout_s), name="spark-jvm-exit", daemon=True).start()


def _reap(proc, timeout_s: float) -> None:
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:      # it would not go: make it
        proc.kill()
        proc.wait()
