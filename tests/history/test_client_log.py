"""clients.log's line format: what a writer puts in, the reader gets back, whatever the message holds."""
from __future__ import annotations

import logging

from kafka_chaos.history.client_log import ClientLogHandler, client_log_path, epoch_bumps, from_record, read_client_log


def record(msg, args, level=logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord("kc", level, __file__, 1, msg, args, None)


def test_a_librdkafka_line_is_split_into_facility_client_broker_and_message():
    line = from_record(record("%s [%s] %s", ("FAIL", "rdkafka#producer-1",
                                              "[thrd:kc-b2:9092/2]: kc-b2:9092/2: Connect to ipv4#10.0.0.3:9092 "
                                              "failed: Connection refused (after 0ms in state CONNECT)")), "harness")
    assert (line.level, line.facility, line.client, line.broker) == ("ERROR", "FAIL", "rdkafka#producer-1",
                                                                     "kc-b2:9092/2")
    assert line.message.startswith("Connect to ipv4#10.0.0.3:9092 failed: Connection refused")


def test_a_line_about_no_broker_and_a_plain_record():
    about_none = from_record(record("%s [%s] %s", ("REBOOTSTRAP", "rdkafka#consumer-2",
                                                    "[thrd:main]: Starting re-bootstrap sequence")), "c0")
    assert (about_none.broker, about_none.message) == ("", "Starting re-bootstrap sequence")
    plain = from_record(record("lost %d", (3,), logging.WARNING), "p0")
    assert (plain.facility, plain.message, plain.level) == ("-", "lost 3", "WARNING")


def test_tabs_newlines_and_backslashes_survive_the_file(tmp_path):
    handler = ClientLogHandler(client_log_path(tmp_path), "p0")
    handler.emit(record("%s [%s] %s", ("ODD", "rdkafka#producer-1", "[thrd:main]: a\tb\nc\\d")))
    handler.close()
    with open(client_log_path(tmp_path), "a") as f:
        f.write("2026-11-23T10:00:00.000+00:00\tERROR\ttorn")        # a torn last line is skipped
    [line] = read_client_log(tmp_path)
    assert line.message == "a\tb\nc\\d" and line.time_ns > 0


def test_no_file_is_no_lines(tmp_path):
    assert read_client_log(tmp_path) == []


def test_an_idempotent_producers_epoch_bumps_are_read_back_and_nothing_else(tmp_path):
    lines = [("producer-p0", "DRAIN", "[thrd:main]: Beginning partition drain in state Assigned for "
                                      "PID{Id:7,Epoch:0} epoch bump for 2 partition(s) with in-flight requests: "
                                      "skipped sequence numbers"),
             ("producer-p1", "DRAIN", "[thrd:main]: Need transaction abort before beginning partition drain in "
                                      "state Assigned for PID{Id:8,Epoch:3} epoch bump for 1 partition(s) with "
                                      "in-flight requests: 3 message(s) timed out on chaos [0]"),
             ("producer-p0", "DRAIN", "[thrd:main]: chaos [1] beginning partition drain: unable to send"),
             ("consumer-c0", "DRAIN", "[thrd:main]: Beginning partition drain ... epoch bump for 1: odd"),
             ("producer-p0", "FAIL", "[thrd:main]: epoch bump mentioned elsewhere: not a bump")]
    for process, facility, text in lines:
        handler = ClientLogHandler(client_log_path(tmp_path), process)
        handler.emit(record("%s [%s] %s", (facility, "rdkafka#producer-1", text), logging.DEBUG))
        handler.close()
    bumps = epoch_bumps(tmp_path)
    assert [(b.producer, b.reason) for b in bumps] == [("p0", "skipped sequence numbers"),
                                                       ("p1", "3 message(s) timed out on chaos [0]")]
    assert all(b.time_ns > 0 for b in bumps) and epoch_bumps(tmp_path / "none") == []
