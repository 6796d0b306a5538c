"""The Java client backend without brokers: profile checks, the JVM's arguments, the compile cache."""
import subprocess

import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.cluster import distribution
from kafka_chaos.workloads.java_client import JavaProducerSpec, build, producer_args
from kafka_chaos.workloads.profile import ProducerProfile


def _cached_version():
    for v in ("4.4.0", "3.9.2"):
        if distribution.cached(v):
            return v
    pytest.skip("no Kafka release in the jar cache (run scripts/setup.sh)")


def test_the_java_profile_refuses_what_the_java_producer_refuses():
    with pytest.raises(UsageError, match="refuses idempotence"):
        ProducerProfile(name="j0", acks="1", idempotent=True, client="java").validate()
    with pytest.raises(UsageError, match="client 'go'"):
        ProducerProfile(client="go").validate()
    assert ProducerProfile(name="j0", acks="1", idempotent=False, client="java").validate().client == "java"


def test_the_jvm_gets_the_profile_as_arguments():
    spec = JavaProducerSpec(3, ProducerProfile(name="j0", acks="1", idempotent=False, retries=0, rate=500.0,
                                               client="java"),
                            "10.0.0.1:9092", "chaos", 3, "/tmp/j", "cp", go_file="/tmp/j/workers.go")
    args = dict(a.split("=", 1) for a in producer_args(spec)[1:])
    assert producer_args(spec)[0] == "producer"
    assert args["acks"] == "1" and args["idempotent"] == "false" and args["retries"] == "0"
    assert args["process"] == "3" and args["rate"] == "500.0" and args["go"] == "/tmp/j/workers.go"
    assert args["stop_timeout_ms"] == str(30_000 + 5_000)


def test_the_program_compiles_once_into_the_cache():
    version = _cached_version()
    first = build(version)
    classes = first.classpath.split(":")[0]
    assert (subprocess.run(["ls", classes], capture_output=True, text=True).stdout.split()
            .count("KafkaChaosClient.class") == 1)
    assert build(version).classpath == first.classpath          # same inputs: the same cached directory
    assert any(p.endswith(f"kafka-clients-{version}.jar") for p in first.classpath.split(":"))


def test_a_transactional_java_producer_runs_its_own_program_with_the_transaction_shape():
    spec = JavaProducerSpec(0, ProducerProfile(name="j0", transactional=True, txn_size=30, abort_every=4,
                                               client="java").validate(),
                            "10.0.0.1:9092", "chaos", 3, "/tmp/j", "cp")
    args = producer_args(spec)
    assert args[0] != "producer"                       # JavaTxnProducer takes no mode word
    kv = dict(a.split("=", 1) for a in args)
    assert kv["txn_size"] == "30" and kv["abort_every"] == "4"


def test_open_transactions_are_not_asked_of_a_client_older_than_3_0():
    from kafka_chaos.workloads.java_client import JavaClient, open_transactions
    assert open_transactions(JavaClient("2.8.2", "cp"), "b:9092", "chaos", [0]) == {}
