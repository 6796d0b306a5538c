"""results/<run_id>/logs/clients.log: what librdkafka said during the run, written by every workload process.

librdkafka logs to stderr unless the client config names a Python `logger`; then confluent-kafka hands each line
to that logger from poll()/consume()/flush(). `client_logger` gives such a logger, kept out of the terminal
(it does not propagate) and writing one tab-separated line per record to clients.log with one os.write on an
O_APPEND descriptor, so the producer, consumer and harness processes share the file without mixing lines.

Informative, and part of the history contract in one respect only (docs/history.md, "clients.log"): the lines in
which an idempotent librdkafka producer bumps its epoch, which no other record shows, are read by the checker
(`epoch_bumps`). The report summarises the rest.
"""
from __future__ import annotations

import datetime as dt
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

CLIENT_LOG = "logs/clients.log"
LOGGER_PREFIX = "kafka_chaos.clients"
FIELDS = ("time", "level", "process", "client", "facility", "broker", "message")

# confluent-kafka calls logger.log(level, "%s [%s] %s", facility, client name, text); the text starts with the
# thread and, for a broker's own lines, the broker: "[thrd:b1:9092/1]: b1:9092/1: Connect to ... failed: ...".
LIBRDKAFKA_FORMAT = "%s [%s] %s"
_THREAD_AND_BROKER = re.compile(r"^\[thrd:[^\]]*\]: (?:(?P<broker>[^\s:]+:\d+/[^\s:]+): )?(?P<text>.*)$", re.S)


def client_log_path(run_dir: Path | str) -> Path:
    return Path(run_dir) / CLIENT_LOG


@dataclass(frozen=True)
class ClientLogLine:
    time_ns: int
    level: str          # Python's name for librdkafka's syslog level: ERROR for %3, WARNING for %4, ...
    process: str        # the workload process that logged it: producer-p0, consumer-c0, harness
    client: str         # librdkafka's instance name, e.g. rdkafka#producer-1
    facility: str       # librdkafka's facility, e.g. FAIL, REQTMOUT
    broker: str         # the broker the line is about ("" when it is about none)
    message: str

    def to_line(self) -> str:
        t = dt.datetime.fromtimestamp(self.time_ns / 1e9, dt.timezone.utc).isoformat(timespec="milliseconds")
        fields = (t, self.level, self.process, self.client, self.facility, self.broker, self.message)
        return "\t".join(_escape(f) for f in fields) + "\n"


def _escape(field: str) -> str:
    return field.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def _unescape(field: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n"}.get(m.group(1), m.group(1)), field)


def from_record(record: logging.LogRecord, process: str) -> ClientLogLine:
    """A log record as a clients.log line: librdkafka's (facility, client, text) split out when it is one."""
    if record.msg == LIBRDKAFKA_FORMAT and isinstance(record.args, tuple) and len(record.args) == 3:
        facility, client, text = (str(a) for a in record.args)
    else:
        facility, client, text = "-", record.name, record.getMessage()
    match = _THREAD_AND_BROKER.match(text)
    broker, message = (match.group("broker") or "", match.group("text")) if match else ("", text)
    return ClientLogLine(int(record.created * 1e9), record.levelname, process, client, facility, broker, message)


class ClientLogHandler(logging.Handler):
    """Appends each record as one line with a single write: whole lines even with several writers."""

    def __init__(self, path: Path | str, process: str):
        super().__init__(logging.DEBUG)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.path = str(path)
        self.process = process
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            os.write(self.fd, from_record(record, self.process).to_line().encode("utf-8", "backslashreplace"))
        except Exception:
            self.handleError(record)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        super().close()


def client_logger(path: Path | str | None, process: str) -> logging.Logger:
    """The logger to pass as `logger` in a librdkafka client's config. With no path (a client outside a run) it
    drops every line, so librdkafka still never writes to the terminal."""
    logger = logging.getLogger(f"{LOGGER_PREFIX}.{process}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    target = None if path is None else str(path)
    for h in list(logger.handlers):
        if getattr(h, "path", None) != target:
            logger.removeHandler(h)
            h.close()
    if not logger.handlers:
        logger.addHandler(logging.NullHandler() if target is None else ClientLogHandler(target, process))
    return logger


def release_client_logger(process: str) -> None:
    """Close the file of `process`'s client logger (a long-lived process, e.g. the harness, once its client is
    closed). Its later lines are dropped: a logger left with no handler would print them through logging's last
    resort, on stderr."""
    client_logger(None, process)


def read_client_log(run_dir: Path | str) -> list[ClientLogLine]:
    """Every line of the run's clients.log in file order; [] when there is none. A torn last line is skipped."""
    path = client_log_path(run_dir)
    if not path.is_file():
        return []
    lines = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        parts = raw.split("\t")
        if len(parts) != len(FIELDS):
            continue
        t, *rest = (_unescape(p) for p in parts)
        try:
            time_ns = int(dt.datetime.fromisoformat(t).timestamp() * 1e9)
        except ValueError:
            continue
        lines.append(ClientLogLine(time_ns, *rest))
    return lines


# librdkafka's line when an idempotent producer starts an epoch bump (rdkafka_idempotence.c,
# rd_kafka_idemp_drain_epoch_bump0, `eos` debug context, facility DRAIN): "Beginning partition drain in state ...
# for PID{...} epoch bump for N partition(s) with in-flight requests: <reason>"; a transactional producer's bump
# first asks for an abort ("Need transaction abort before beginning partition drain ... epoch bump ...").
EPOCH_BUMP = re.compile(r"partition drain .*epoch bump .*?: (?P<reason>.*)$")


@dataclass(frozen=True)
class EpochBump:
    time_ns: int
    producer: str       # the producer's name in sends.parquet (its process "producer-<name>")
    reason: str         # librdkafka's: "skipped sequence numbers", "unknown producer id", "N message(s) timed out"


def epoch_bumps(run_dir: Path | str) -> list[EpochBump]:
    """Every epoch bump an idempotent producer of the run logged, in file order. Lines are filtered as text before
    they are parsed: clients.log can hold hundreds of thousands of lines."""
    path = client_log_path(run_dir)
    if not path.is_file():
        return []
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            if "\tDRAIN\t" not in raw or "epoch bump" not in raw:
                continue
            parts = raw.rstrip("\n").split("\t")
            if len(parts) != len(FIELDS) or not parts[2].startswith("producer-"):
                continue
            match = EPOCH_BUMP.search(_unescape(parts[6]))
            try:
                time_ns = int(dt.datetime.fromisoformat(parts[0]).timestamp() * 1e9)
            except ValueError:
                continue
            if match:
                out.append(EpochBump(time_ns, parts[2][len("producer-"):], match.group("reason").strip()))
    return out
