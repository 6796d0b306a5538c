"""Which replication rules apply in which Kafka release, in one table: the model asks `applies(rule, version)`.

Each rule names the KIP or change it comes from and the Kafka code it mirrors (read in apache/kafka, not copied).
Eligible leader replicas (KIP-966) are a feature a cluster has on or off, so the model takes them from meta.json
(`elr_enabled`, which the harness reads from the running cluster); the table gives the release they came with.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafka_chaos.base.versions import ELR_DEFAULT_FROM, version_tuple


@dataclass(frozen=True)
class Rule:
    since: tuple[int, ...]
    source: str
    mirrors: str


RULES: dict[str, Rule] = {
    "unclean_election_in_kraft": Rule(
        (3, 9), "KAFKA-12670: KRaft honours unclean.leader.election.enable (ignored before 3.9)",
        "PartitionChangeBuilder.electLeader, its unclean path; ReplicationControlManager's unclean election task"),
    "eligible_leader_replicas": Rule(
        ELR_DEFAULT_FROM,
        "KIP-966: eligible leader replicas, on by default for new clusters from 4.1 (a feature from 4.0)",
        "PartitionChangeBuilder.maybePopulateTargetElr; ReplicationControlManager.handleBrokerUncleanShutdown"),
    "last_known_leader": Rule(
        (4, 0), "KIP-966: with ISR and ELR empty, the last known leader may lead again (liveness fix KAFKA-19522, 4.1)",
        "PartitionChangeBuilder.canElectLastKnownLeader"),
    "one_stale_broker_fenced_at_a_time": Rule(
        (3, 3), "KRaft brokers' sessions: the controller fences the stalest broker first, one at a time",
        "ReplicationControlManager.maybeFenceOneStaleBroker, BrokerHeartbeatManager.findOneStaleBroker"),
}


def applies(rule: str, version: str) -> bool:
    """Whether `rule` (a key of RULES) holds in Kafka `version`."""
    return version_tuple(version) >= RULES[rule].since
