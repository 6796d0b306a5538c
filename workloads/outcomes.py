"""Classify a send's result the way librdkafka means it: ok, fail (certainly never in a log) or info (unknown).

In delivery reports `err.retriable()` and `err.fatal()` are always False (the Python binding never sets them), so
the class comes from the error code alone. A report carries only the last attempt's error, and any earlier attempt
may have timed out in flight after the broker appended it: so only errors that no attempt could have got past are
`fail`, and everything unknown is `info`.
"""
from __future__ import annotations

from confluent_kafka import KafkaError

OK, FAIL, INFO = "ok", "fail", "info"

# The message never left the client, or every broker rejects it deterministically (no attempt could land).
DEFINITE_FAILURES = frozenset({
    KafkaError._TIMED_OUT_QUEUE,      # "certain that the message has not been sent"
    KafkaError._QUEUE_FULL,
    KafkaError.MSG_SIZE_TOO_LARGE,
    KafkaError.RECORD_LIST_TOO_LARGE,
    KafkaError.INVALID_RECORD,
    KafkaError.INVALID_REQUIRED_ACKS,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError._UNKNOWN_TOPIC,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._INVALID_ARG,
})

# Rejected before the append, so definite for a single attempt; with retries an earlier attempt may have landed.
FAIL_IF_SINGLE_ATTEMPT = frozenset({
    KafkaError.NOT_ENOUGH_REPLICAS,
    # our own purge() of messages still queued. librdkafka reports _PURGE_QUEUE for the partition's message queue
    # and its transmit queue alike (rdkafka_partition.c, rd_kafka_toppar_purge_queues), and a retry waits in
    # those after an attempt that may have landed. Seen: leader-kill acks=all idempotent, 80 values purged with
    # _PURGE_QUEUE after a fatal OUT_OF_ORDER_SEQUENCE_NUMBER replaced the client, all 80 in the log.
    KafkaError._PURGE_QUEUE,
})


def classify(code: int, single_attempt: bool) -> str:
    """The outcome of a delivery report with error `code`; `single_attempt`: the producer never retries."""
    if code in DEFINITE_FAILURES:
        return FAIL
    if single_attempt and code in FAIL_IF_SINGLE_ATTEMPT:
        return FAIL
    return INFO
