"""The Java client backend: Kafka's own producer and consumer (kafka-clients of the release under test), driven by
workloads/java/KafkaChaosClient.java, side by side with librdkafka.

The program is compiled once per (source, client jars, javac) into the cache, keyed by a hash of those inputs.
Each Java worker runs under a spawned Python wrapper with the Python workers' entry signature: the wrapper writes
the journal sidecar (so the history build cannot tell the clients apart except by the producer's `client`), starts
the JVM, waits for its "ready" line, copies its progress into the shared counters, and stops it by closing its
stdin. The JVM writes the journals itself, in history/journal.py's format.
"""
from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from kafka_chaos.base.errors import EnvironmentProblem
from kafka_chaos.base.paths import cache_dir
from kafka_chaos.base.versions import version_tuple
from kafka_chaos.cluster import distribution
from kafka_chaos.history.journal import group_paths, producer_paths, read_progress, reads_paths, write_sidecar
from kafka_chaos.workloads.producer import COUNTER_SLOTS, INVOKED, SENT_FAIL, SENT_INFO, SENT_OK
from kafka_chaos.workloads.profile import ProducerProfile
from kafka_chaos.workloads.worker import detach_from_ctrl_c, should_stop

log = logging.getLogger(__name__)

MAIN_CLASS = "KafkaChaosClient"
# kafka-clients and what it loads at run time (compression codecs, the logging facade; no logging backend:
# the client's own log lines are dropped, as slf4j's no-operation logger does)
CLIENT_JARS = ("kafka-clients-", "slf4j-api-", "lz4-java-", "snappy-java-", "zstd-jni-")
GO_FILE = "workers.go"      # in the journal directory: created when every worker is ready; Java producers wait for it
JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")
OPEN_TXNS_CLASS = "OpenTransactions"     # DescribeProducers through Admin (kafka-clients 3.0+, KIP-664)
DESCRIBE_PRODUCERS_FROM = (3, 0)


def source_file() -> Path:
    return Path(str(resources.files("kafka_chaos.workloads") / "java" / f"{MAIN_CLASS}.java"))


@dataclass(frozen=True)
class JavaClient:
    """A compiled KafkaChaosClient: the classpath to run it with and the kafka-clients version it drives."""

    version: str
    classpath: str

    def meta(self) -> dict:
        return {"library": "kafka-clients", "version": self.version, "jvm": _java_version()}


def _java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    first = out.splitlines()[0] if out else ""
    return first.split('"')[1] if first.count('"') >= 2 else first


def client_jars(kafka_version: str) -> list[Path]:
    libs = distribution.resolve(kafka_version).libs
    jars = [j for prefix in CLIENT_JARS for j in sorted(libs.glob(f"{prefix}*.jar"))]
    if not any(j.name.startswith("kafka-clients-") for j in jars):
        raise EnvironmentProblem(f"no kafka-clients jar in {libs}",
                                 f"remove {libs.parent} and run `kafka-chaos setup --kafka-version {kafka_version}`")
    return jars


def build(kafka_version: str) -> JavaClient:
    """Compile the Java workload against `kafka_version`'s client jars, once (cached by a hash of the inputs)."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            raise EnvironmentProblem(f"`{tool}` is not on PATH: the Java client backend needs a JDK (17 or newer)",
                                     "install openjdk-17-jdk-headless (scripts/setup.sh does), or use "
                                     "--client librdkafka")
    jars = client_jars(kafka_version)
    src = source_file()
    javac = subprocess.run(["javac", "-version"], capture_output=True, text=True).stdout.strip()
    sources = sorted(f for f in src.parent.glob("*.java")     # KafkaChaosClient, EosProcessor, OpenTransactions
                     if f.stem != OPEN_TXNS_CLASS or version_tuple(kafka_version) >= DESCRIBE_PRODUCERS_FROM)
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in sources))
    for part in [j.name for j in jars] + [javac]:
        digest.update(part.encode() + b"\0")
    out = cache_dir() / "java-client" / digest.hexdigest()[:16]
    if not (out / "COMPLETE").exists():
        tmp = out.with_name(out.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        proc = subprocess.run(["javac", "-nowarn", "-d", str(tmp), "-cp", ":".join(map(str, jars)),
                               *map(str, sources)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise EnvironmentProblem(f"javac could not compile {src} against kafka-clients {kafka_version}: "
                                     f"{proc.stderr.strip()[-800:]}",
                                     "use a JDK 17 or newer; or use --client librdkafka")
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
        (out / "COMPLETE").write_text(javac + "\n")
        log.info("compiled the Java workload against kafka-clients %s into %s", kafka_version, out)
    return JavaClient(kafka_version, ":".join([str(out)] + [str(j) for j in jars]))


def open_transactions(java: JavaClient, bootstrap: str, topic: str, partitions: list[int],
                      timeout_s: float = 90) -> dict[int, list[dict]]:
    """The producers with a transaction open on each partition, as its leader names them (DescribeProducers):
    partition -> [{producer_id, producer_epoch, start_offset, last_timestamp_ms}], or {"error": ...} entries.
    Empty where the client is older than 3.0 or the JVM fails: the brokers then name no one."""
    if version_tuple(java.version) < DESCRIBE_PRODUCERS_FROM or not partitions:
        return {}
    try:
        proc = subprocess.run(["java", *JVM_OPTIONS, "-cp", java.classpath, OPEN_TXNS_CLASS, bootstrap, topic,
                               *map(str, partitions)], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as e:
        log.warning("open transactions of %s %s: %s", topic, partitions, e)
        return {}
    found: dict[int, list[dict]] = {}
    for line in proc.stdout.splitlines():
        f = line.split("\t")
        if f[0] == "error" and len(f) >= 3:
            found.setdefault(int(f[1]), []).append({"error": f[2]})
        elif len(f) == 5 and f[0].isdigit():
            found.setdefault(int(f[0]), []).append({"producer_id": int(f[1]), "producer_epoch": int(f[2]),
                                                    "start_offset": int(f[3]), "last_timestamp_ms": int(f[4])})
    if proc.returncode != 0:
        log.warning("open transactions of %s %s: exit %d: %s", topic, partitions, proc.returncode,
                    proc.stderr.strip()[-400:])
    return found


@dataclass(frozen=True)
class JavaProducerSpec:
    process: int
    profile: ProducerProfile
    bootstrap_servers: str
    topic: str
    partitions: int
    journal_dir: str
    classpath: str
    flush_interval_s: float = 0.25
    stop_timeout_s: float | None = None     # None: the delivery timeout + 5 s
    client_log: str | None = None           # where the JVM's stderr goes
    go_file: str | None = None              # the first send waits until this file exists (None: at once)


@dataclass(frozen=True)
class JavaConsumerSpec:
    index: int
    name: str
    bootstrap_servers: str
    topic: str
    partitions: int
    journal_dir: str
    classpath: str
    group_id: str = "kafka-chaos"
    flush_interval_s: float = 0.25
    client_log: str | None = None


def producer_args(spec: JavaProducerSpec) -> list[str]:
    p = spec.profile
    stop = spec.stop_timeout_s if spec.stop_timeout_s is not None else p.delivery_timeout_ms / 1000 + 5
    args = {"bootstrap": spec.bootstrap_servers, "topic": spec.topic, "partitions": spec.partitions,
            "journal": spec.journal_dir, "process": spec.process, "name": p.name, "acks": p.acks,
            "idempotent": str(p.idempotent).lower(), "max_in_flight": p.max_in_flight,
            "delivery_timeout_ms": p.delivery_timeout_ms, "request_timeout_ms": p.request_timeout_ms,
            "linger_ms": p.linger_ms, "rate": p.rate or 0, "flush_interval_s": spec.flush_interval_s,
            "stop_timeout_ms": int(stop * 1000)}
    if p.retries is not None:
        args["retries"] = p.retries
    if spec.go_file:
        args["go"] = spec.go_file
    if p.transactional:                 # JavaTxnProducer: its own main, no mode word
        args.update(txn_size=p.txn_size, abort_every=p.abort_every)
        return [f"{k}={v}" for k, v in args.items()]
    return ["producer"] + [f"{k}={v}" for k, v in args.items()]


def run_java_producer(spec: JavaProducerSpec, stop_event, ready_event, counters, parent_pid: int) -> None:
    """Process entry point (the signature of workloads.producer.run_producer)."""
    detach_from_ctrl_c()
    paths = producer_paths(spec.journal_dir, spec.process)
    write_sidecar(paths["sidecar"], {"kind": "sends", "process": spec.process, "producer": spec.profile.name,
                                     "acks": spec.profile.acks, "idempotent": spec.profile.idempotent,
                                     "profile": spec.profile.to_meta()})
    slot = spec.process * COUNTER_SLOTS

    def publish():
        got = read_progress(paths["progress"])
        if got:
            for k, v in ((INVOKED, got["invoked"]), (SENT_OK, got["ok"]), (SENT_FAIL, got["fail"]),
                         (SENT_INFO, got["info"])):
                counters[slot + k] = v

    stop = spec.stop_timeout_s if spec.stop_timeout_s is not None else spec.profile.delivery_timeout_ms / 1000 + 5
    _supervise(spec.classpath, producer_args(spec), spec.client_log, f"producer-{spec.profile.name}",
               stop_event, ready_event, parent_pid, publish, spec.flush_interval_s, stop + 20,
               main="JavaTxnProducer" if spec.profile.transactional else MAIN_CLASS)


def run_java_consumer(spec: JavaConsumerSpec, stop_event, ready_event, counters, parent_pid: int) -> None:
    """Process entry point (the signature of workloads.consumer.run_consumer): a live consumer in assign mode."""
    detach_from_ctrl_c()
    paths = reads_paths(spec.journal_dir, spec.name)
    write_sidecar(paths["sidecar"], {"kind": "reads", "consumer": spec.name, "phase": "live"})
    count_file = paths["data"].with_suffix(".count")

    def publish():
        try:
            counters[spec.index] = int(count_file.read_text().split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            pass

    args = ["consumer"] + [f"{k}={v}" for k, v in {
        "bootstrap": spec.bootstrap_servers, "topic": spec.topic, "partitions": spec.partitions,
        "journal": spec.journal_dir, "name": spec.name, "group": f"{spec.group_id}-{spec.name}",
        "flush_interval_s": spec.flush_interval_s}.items()]
    _supervise(spec.classpath, args, spec.client_log, f"consumer-{spec.name}", stop_event, ready_event,
               parent_pid, publish, spec.flush_interval_s, 30)


def run_java_group_consumer(spec, stop_event, ready_event, counters, parent_pid: int) -> None:
    """Process entry point of a consumer-group member on the Java client (workloads/java/JavaGroupConsumer.java;
    the spec is workloads.group_consumer.GroupConsumerSpec with client "java"). The JVM's pid goes to
    group-NAME.pid, so a consumer-kill kills the JVM itself (signal_jvm), not only this wrapper."""
    detach_from_ctrl_c()
    reads, group = reads_paths(spec.journal_dir, spec.name), group_paths(spec.journal_dir, spec.name)
    write_sidecar(reads["sidecar"], {"kind": "reads", "consumer": spec.name, "phase": "live"})
    write_sidecar(group["sidecar"], {"kind": "group", "consumer": spec.name, "commit_mode": spec.commit})
    count_file = reads["data"].with_suffix(".count")

    def publish():
        try:
            counters[spec.index] = int(count_file.read_text().split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            pass

    args = [f"{k}={v}" for k, v in {
        "bootstrap": spec.bootstrap_servers, "topic": spec.topic, "journal": spec.journal_dir, "name": spec.name,
        "index": spec.index, "group": spec.group_id, "commit": spec.commit, "rejoin_s": spec.rejoin_s or 0,
        "auto_commit_interval_ms": spec.auto_commit_interval_ms, "flush_interval_s": spec.flush_interval_s,
        "ready_timeout_s": spec.ready_timeout_s}.items()]
    _supervise(spec.classpath, args, spec.client_log, f"consumer-{spec.name}", stop_event, ready_event,
               parent_pid, publish, spec.flush_interval_s, 30, main="JavaGroupConsumer",
               pid_file=group_pid_file(spec.journal_dir, spec.name))


def group_pid_file(journal_dir, name: str) -> str:
    return f"{journal_dir}/group-{name}.pid"


def signal_jvm(pid_file: str, sig: str) -> int | None:
    """Send `sig` to the JVM whose pid is in `pid_file`; its pid, or None when there is none (not started)."""
    import os
    import signal

    try:
        pid = int(Path(pid_file).read_text().split()[0])
        os.kill(pid, getattr(signal, sig))
        return pid
    except (OSError, ValueError, IndexError):
        return None


def run_java_processor(spec, stop_event, ready_event, counters, parent_pid: int) -> None:
    """Process entry point of an exactly-once processor on the Java client (workloads/java/EosProcessor.java; the
    spec is workloads.eos.ProcessorSpec with `classpath`). The JVM's pid goes to eos-NAME.pid, so a consumer-kill
    or consumer-pause reaches the JVM itself, not only this wrapper."""
    from kafka_chaos.workloads.eos import SLOTS, write_sidecars

    detach_from_ctrl_c()
    progress = write_sidecars(spec)
    base = spec.index * SLOTS

    def publish():
        got = read_progress(progress)
        if got:
            for k, key in enumerate(("invoked", "ok", "fail", "info")):
                counters[base + k] = got[key]

    args = [f"{k}={v}" for k, v in {
        "bootstrap": spec.bootstrap_servers, "input": spec.input_topic, "output": spec.output_topic,
        "journal": spec.journal_dir, "name": spec.name, "process": spec.index, "group": spec.group_id,
        "txn_id": f"{spec.transactional_prefix}-{spec.slot}", "batch": spec.batch, "rate": spec.rate or 0,
        "txn_timeout_ms": spec.transaction_timeout_ms}.items()]
    _supervise(spec.classpath, args, spec.client_log, f"processor-{spec.name}", stop_event, ready_event,
               parent_pid, publish, spec.flush_interval_s, 30, main="EosProcessor",
               pid_file=f"{spec.journal_dir}/eos-{spec.name}.pid")


def _supervise(classpath: str, args: list[str], client_log: str | None, name: str, stop_event, ready_event,
               parent_pid: int, publish, interval_s: float, stop_timeout_s: float, main: str = MAIN_CLASS,
               pid_file: str | None = None) -> None:
    """Start the JVM, pass its readiness on, publish its progress, and end it: stdin closed, then (if it
    overstays) killed. Its stderr is appended to `client_log` (informative)."""
    err = open(client_log, "a", encoding="utf-8") if client_log else subprocess.DEVNULL
    proc = subprocess.Popen(["java", *JVM_OPTIONS, "-cp", classpath, main, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=err, text=True)
    if pid_file:
        Path(pid_file).write_text(f"{proc.pid}\n")
    try:
        line = proc.stdout.readline()
        if not line.startswith("ready"):
            raise SystemExit(f"{name}: the Java client did not start (exit {proc.wait()}); see {client_log}")
        ready_event.set()
        while proc.poll() is None and not should_stop(stop_event, parent_pid):
            publish()
            time.sleep(interval_s)
        proc.stdin.close()
        try:
            proc.wait(stop_timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("%s: the Java client did not stop within %.0f s: killing it", name, stop_timeout_s)
            proc.kill()
            proc.wait()
        publish()
        if proc.returncode:
            raise SystemExit(f"{name}: the Java client exited with code {proc.returncode}; see {client_log}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if err is not subprocess.DEVNULL:
            err.close()
