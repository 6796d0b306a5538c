"""librdkafka's own lines go to results/<run_id>/logs/clients.log and never to the terminal: real clients pointed at
a closed port (nothing listens on 127.0.0.1:9), their output captured at the file-descriptor level."""
from __future__ import annotations

import time

from kafka_chaos.history.client_log import client_log_path, read_client_log
from kafka_chaos.workloads.client_logging import client_logging
from kafka_chaos.workloads.consumer import consumer_config
from kafka_chaos.workloads.worker import spawn_context

CLOSED = "127.0.0.1:9"


def poll_consumer(log_path, process: str, seconds: float) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(consumer_config(CLOSED, "test-client-log") | client_logging(log_path, process))
    consumer.subscribe(["t"])
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        consumer.poll(0.1)
    consumer.close()


def test_a_consumer_that_cannot_connect_logs_to_the_file_and_nothing_to_the_terminal(tmp_path, capfd):
    path = client_log_path(tmp_path)
    poll_consumer(str(path), "consumer-c0", 1.5)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    lines = read_client_log(tmp_path)
    refused = [x for x in lines if x.facility == "FAIL" and "Connection refused" in x.message]
    assert refused, path.read_text()
    first = refused[0]
    assert (first.level, first.process, first.broker) == ("ERROR", "consumer-c0", f"{CLOSED}/bootstrap")
    assert first.client.startswith("rdkafka#consumer-") and not first.message.startswith("[thrd:")


def test_a_producer_logs_on_poll_and_flush(tmp_path, capfd):
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": CLOSED, "message.timeout.ms": 1000}
                        | client_logging(str(client_log_path(tmp_path)), "producer-p0"))
    producer.produce("t", b"x")
    producer.poll(0.5)
    producer.flush(2)
    assert capfd.readouterr() == ("", "")
    assert {x.process for x in read_client_log(tmp_path)} == {"producer-p0"}


def test_client_debug_contexts_go_to_the_same_file(tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("KAFKA_CHAOS_CLIENT_DEBUG", "broker")
    poll_consumer(str(client_log_path(tmp_path)), "consumer-debug", 1.0)
    assert capfd.readouterr() == ("", "")
    levels = {x.level for x in read_client_log(tmp_path)}
    assert {"DEBUG", "ERROR"} <= levels


def test_an_idempotent_producer_logs_its_eos_context_for_the_checker_and_a_plain_one_does_not(tmp_path, capfd,
                                                                                               monkeypatch):
    from confluent_kafka import Producer

    for name, idempotent in (("idem", True), ("plain", False)):
        producer = Producer({"bootstrap.servers": CLOSED, "message.timeout.ms": 1000, "enable.idempotence": idempotent}
                            | client_logging(str(client_log_path(tmp_path / name)), f"producer-{name}", idempotent))
        producer.produce("t", b"x")
        producer.flush(2)
    assert capfd.readouterr() == ("", "")
    idem = read_client_log(tmp_path / "idem")
    assert any(x.level == "DEBUG" and x.facility == "IDEMPSTATE" for x in idem)
    assert not any(x.level == "DEBUG" for x in read_client_log(tmp_path / "plain"))
    monkeypatch.setenv("KAFKA_CHAOS_CLIENT_DEBUG", "msg")
    assert client_logging(None, "producer-p0", idempotent=True)["debug"] == "msg,eos"


def test_without_a_run_the_lines_are_dropped_not_printed(capfd):
    poll_consumer(None, "consumer-nowhere", 1.0)
    assert capfd.readouterr() == ("", "")


def test_processes_writing_at_once_leave_whole_lines(tmp_path, capfd):
    path = str(client_log_path(tmp_path))
    ctx = spawn_context()
    procs = [ctx.Process(target=poll_consumer, args=(path, f"consumer-c{i}", 2.0)) for i in range(3)]
    for p in procs:
        p.start()
    poll_consumer(path, "drain-final", 2.0)
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    raw = client_log_path(tmp_path).read_text().splitlines()
    lines = read_client_log(tmp_path)
    assert len(lines) == len(raw) > 20                      # every line parses: none torn or interleaved
    assert {x.process for x in lines} == {"consumer-c0", "consumer-c1", "consumer-c2", "drain-final"}
    assert capfd.readouterr().err == ""
