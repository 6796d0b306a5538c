"""The client-errors summary beside the timeline: real librdkafka lines (a consumer pointed at a closed port) read
back from logs/clients.log, grouped by level, facility, broker and message, with their first and last time."""
from __future__ import annotations

import json
import logging
import re
import time

from kafka_chaos.history.client_log import ClientLogHandler, client_log_path, client_logger, release_client_logger
from kafka_chaos.report.client_errors import client_errors
from kafka_chaos.report.data import load_run
from kafka_chaos.report.page import write_report
from tests.report.page import parse, visible_text

CLOSED = "127.0.0.1:9"


def log_real_client_lines(run_dir, seconds: float = 1.5) -> None:
    """A real consumer that cannot connect, its log in the run's clients.log; the run starts when it does."""
    from confluent_kafka import Consumer

    meta = json.loads((run_dir / "meta.json").read_text())
    (run_dir / "meta.json").write_text(json.dumps(meta | {"start_ns": time.time_ns()}))
    consumer = Consumer({"bootstrap.servers": CLOSED, "group.id": "report-test", "log_level": 6,
                         "logger": client_logger(str(client_log_path(run_dir)), "consumer-c0")})
    consumer.subscribe(["t"])
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        consumer.poll(0.1)
    consumer.close()
    release_client_logger("consumer-c0")


def write_lines(run_dir, *lines: tuple[int, str, str, str]) -> None:
    """(level, facility, thread-and-broker prefix, text) records through the real handler."""
    handler = ClientLogHandler(client_log_path(run_dir), "producer-p0")
    for level, facility, prefix, text in lines:
        handler.emit(logging.LogRecord("kc", level, __file__, 1, "%s [%s] %s",
                                       (facility, "rdkafka#producer-1", prefix + text), None))
    handler.close()


def test_the_report_counts_connection_refused_per_broker_with_first_and_last_time(make_run):
    run_dir = make_run("refused")
    log_real_client_lines(run_dir)
    html = write_report(run_dir).read_text()
    summary = client_errors(load_run(run_dir))
    refused = [r for r in summary.rows if r.facility == "FAIL" and "Connection refused" in r.message]
    assert len(refused) == 1, summary.rows            # one group, however many lines and "(after Nms ...)"
    row = refused[0]
    in_file = client_log_path(run_dir).read_text().count("Connection refused")
    assert row.count == in_file > 3
    assert (row.level, row.broker, row.processes) == ("ERROR", f"{CLOSED}/bootstrap", ["consumer-c0"])
    assert 0 <= row.first_s < row.last_s <= 3
    assert "client-errors" in parse(html).ids
    text = visible_text(html)
    assert re.search(rf"error FAIL {re.escape(CLOSED)}/bootstrap Connect to ipv4#127\.0\.0\.1:9 failed: "
                     rf"Connection refused [^|]*? {in_file} ", text), text[:2000]
    assert ("a", "href", "logs/clients.log") in parse(html).links


def test_groups_split_by_broker_and_level_and_quieter_levels_are_only_counted(make_run):
    run_dir = make_run("grouped")
    b1, b2 = "[thrd:kc-b1:9092/1]: kc-b1:9092/1: ", "[thrd:kc-b2:9092/2]: kc-b2:9092/2: "
    write_lines(run_dir, *[(logging.ERROR, "FAIL", b1, f"Connect failed (after {i}ms in state CONNECT)")
                           for i in range(5)],
                (logging.ERROR, "FAIL", b2, "Connect failed (after 1ms in state CONNECT)"),
                (logging.WARNING, "REQTMOUT", b2, "Timed out 3 in-flight requests"),
                (logging.INFO, "CLUSTERID", "[thrd:main]: ", "cluster id changed"))
    summary = client_errors(load_run(run_dir))
    assert [(r.level, r.facility, r.broker, r.count) for r in summary.rows] == [
        ("ERROR", "FAIL", "kc-b1:9092/1", 5), ("ERROR", "FAIL", "kc-b2:9092/2", 1),
        ("WARNING", "REQTMOUT", "kc-b2:9092/2", 1)]
    assert summary.rows[0].message == "Connect failed (after 0ms in state CONNECT)"
    assert summary.total == 7 and summary.quieter == {"INFO": 1}
    assert client_errors(load_run(run_dir), max_rows=1).hidden_rows == 2


def test_a_run_without_a_client_log_says_so(make_run):
    html = write_report(make_run("old")).read_text()
    assert "No logs/clients.log : this run recorded no client log." in visible_text(html)
    assert "client-errors" not in parse(html).ids
