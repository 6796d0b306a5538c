"""Producer profiles are checked by librdkafka itself, and delivery errors are classified on their code."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from kafka_chaos.base.errors import UsageError
from kafka_chaos.workloads.outcomes import FAIL, INFO, classify
from kafka_chaos.workloads.profile import ProducerProfile
from kafka_chaos.workloads.run import WorkloadConfig


def test_the_client_rejects_acks_1_with_idempotence_before_the_run():
    with pytest.raises(UsageError, match="client rejects.*acks.*all.*idempotence"):
        ProducerProfile(acks="1", idempotent=True).validate()


def test_the_client_rejects_idempotence_with_six_in_flight():
    with pytest.raises(UsageError, match="max.in.flight"):
        ProducerProfile(idempotent=True, max_in_flight=6).validate()


def test_acks_must_be_0_1_or_all():
    with pytest.raises(UsageError, match="acks='2'"):
        ProducerProfile(acks="2", idempotent=False).validate()


def test_acks_minus_one_means_all():
    assert ProducerProfile(acks="-1").acks == "all"


@pytest.mark.parametrize("profile", [
    ProducerProfile(acks="all", idempotent=True),
    ProducerProfile(acks="1", idempotent=False, retries=0, max_in_flight=1),
    ProducerProfile(acks="0", idempotent=False, rate=100.0),
])
def test_valid_profiles_pass(profile):
    assert profile.validate() is profile


def test_profile_meta_has_the_documented_keys_with_effective_values():
    assert ProducerProfile().to_meta()["retries"] == 2_147_483_647
    assert ProducerProfile(retries=3).to_meta()["retries"] == 3
    assert set(ProducerProfile().to_meta()) == {"name", "acks", "idempotent", "max_in_flight", "retries",
                                                 "delivery_timeout_ms", "request_timeout_ms", "linger_ms", "rate",
                                                 "client"}


def test_a_workload_with_a_profile_the_client_rejects_fails_before_it_starts():
    with pytest.raises(UsageError, match="producer bad: the Kafka client rejects"):
        WorkloadConfig(producers=[ProducerProfile("good"), ProducerProfile("bad", acks="1")]).validate()


def test_workload_config_rejects_duplicate_producer_names_and_unknown_modes():
    with pytest.raises(UsageError, match="unique"):
        WorkloadConfig(producers=[ProducerProfile("p"), ProducerProfile("p")]).validate()
    with pytest.raises(UsageError, match="consumer mode"):
        WorkloadConfig(consumer_mode="broadcast").validate()


@pytest.mark.parametrize("code", [KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT, KafkaError._TRANSPORT,
                                  KafkaError.REQUEST_TIMED_OUT, KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                                  KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.NETWORK_EXCEPTION,
                                  KafkaError._PURGE_INFLIGHT, KafkaError.UNKNOWN])
def test_errors_after_which_the_write_may_be_in_the_log_are_indeterminate(code):
    assert classify(code, single_attempt=True) == INFO
    assert classify(code, single_attempt=False) == INFO


@pytest.mark.parametrize("code", [KafkaError.MSG_SIZE_TOO_LARGE,
                                  KafkaError.INVALID_REQUIRED_ACKS, KafkaError.UNKNOWN_TOPIC_OR_PART])
def test_writes_that_never_reached_a_log_fail(code):
    assert classify(code, single_attempt=False) == FAIL


@pytest.mark.parametrize("code", [KafkaError.NOT_ENOUGH_REPLICAS, KafkaError._PURGE_QUEUE])
def test_rejected_or_purged_fails_only_when_no_earlier_attempt_may_have_landed(code):
    # a purged queue holds retries too: messages whose earlier attempt may be in the log
    assert classify(code, single_attempt=True) == FAIL
    assert classify(code, single_attempt=False) == INFO


def test_a_producer_without_retries_is_single_attempt():
    assert ProducerProfile(idempotent=False, acks="1", retries=0).single_attempt
    assert not ProducerProfile(idempotent=False, acks="1").single_attempt
