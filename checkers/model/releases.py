"""Which replication rules apply in which Kafka release and metadata mode, in one table: the model asks
`applies(rule, version, mode)`, and the verdict lists the rules a run was judged by (`rules_used`).

Each rule names the KIP or change it comes from and the Kafka code it mirrors (read in apache/kafka, not copied).
Eligible leader replicas (KIP-966) are a feature a cluster has on or off, so the model takes them from meta.json
(`elr_enabled`, which the harness reads from the running cluster); the table gives the release they came with.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafka_chaos.base.versions import ELR_DEFAULT_FROM, KRAFT, ZOOKEEPER, version_tuple

BOTH = (KRAFT, ZOOKEEPER)


@dataclass(frozen=True)
class Rule:
    since: tuple[int, ...]
    source: str
    mirrors: str
    modes: tuple[str, ...] = BOTH
    until: tuple[int, ...] | None = None        # the first release without it
    modelled: bool = True                       # False: the model does not replay it (named so a reader knows)


RULES: dict[str, Rule] = {
    "leader_epoch_truncation": Rule(
        (0, 11), "KIP-101: followers truncate to the new leader's log by leader epoch, not to their high watermark",
        "LeaderEpochFileCache; AbstractFetcherThread.truncateToEpochEndOffsets; the leader's OffsetsForLeaderEpoch"),
    "epoch_end_offset_for_older_epochs": Rule(
        (2, 0), "KIP-279: OffsetsForLeaderEpoch answers for the largest epoch at or below the one asked, so quick "
        "successive leader changes no longer leave replicas diverged (KAFKA-6361); before 2.0 the model's "
        "'every replica ends up with the leader's log' may not hold and a divergence shows as a disagreement",
        "LeaderEpochFileCache.endOffsetFor; ReplicaFetcherThread's truncation", modelled=False),
    "fetch_carries_leader_epoch": Rule(
        (2, 1), "KIP-320: fetch requests carry the leader epoch, so a follower (and a consumer) detects a "
        "truncation it missed instead of reading across it",
        "AbstractFetcherThread (FENCED_LEADER_EPOCH / diverging epoch), KafkaConsumer's validatePositions",
        modelled=False),
    "session_defaults_kip537": Rule(
        (2, 5), "KIP-537: zookeeper.session.timeout.ms 18 s (was 6 s), replica.lag.time.max.ms 30 s (was 10 s)",
        "KafkaConfig defaults; history.meta fills them in for runs that did not set them", modes=(ZOOKEEPER,)),
    "zookeeper_controller": Rule(
        (0, 8), "ZooKeeper mode: brokers live while their ZooKeeper session does (ephemeral /brokers/ids/N); one "
        "broker, elected through /controller, removes dead brokers from the ISR (the last member stays) and elects "
        "the first live ISR replica in assignment order; a broker acts on the controller's LeaderAndIsr",
        "KafkaController.onBrokerFailure/onReplicasBecomeOffline; ReplicaStateMachine.doRemoveReplicasFromIsr; "
        "PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection; ControlledShutdownLeaderElectionStrategy",
        modes=(ZOOKEEPER,), until=(4, 0)),
    "unclean_election_in_zookeeper": Rule(
        (0, 8), "ZooKeeper mode honours unclean.leader.election.enable (the topic's config wins): with no live ISR "
        "replica, the first live replica leads", "PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection; "
        "PartitionStateMachine.collectUncleanLeaderElectionState", modes=(ZOOKEEPER,), until=(4, 0)),
    "isr_change_through_controller": Rule(
        (2, 7), "KIP-497: the leader asks the controller to change the ISR (AlterIsr, later AlterPartition); before "
        "2.7 it wrote the ISR to ZooKeeper itself, so a leader cut from the controller but not from ZooKeeper "
        "could still shrink it", "Partition.maybeShrinkIsr -> AlterPartitionManager (2.7+); "
        "Partition.updateIsr -> KafkaZkClient.conditionalUpdatePath (before)", modes=(ZOOKEEPER,)),
    "unclean_election_in_kraft": Rule(
        (3, 9), "KAFKA-12670: KRaft honours unclean.leader.election.enable (ignored before 3.9)",
        "PartitionChangeBuilder.electLeader, its unclean path; ReplicationControlManager's unclean election task",
        modes=(KRAFT,)),
    "eligible_leader_replicas": Rule(
        ELR_DEFAULT_FROM,
        "KIP-966: eligible leader replicas, on by default for new clusters from 4.1 (a feature from 4.0)",
        "PartitionChangeBuilder.maybePopulateTargetElr; ReplicationControlManager.handleBrokerUncleanShutdown",
        modes=(KRAFT,)),
    "last_known_leader": Rule(
        (4, 0), "KIP-966: with ISR and ELR empty, the last known leader may lead again (liveness fix KAFKA-19522, "
        "4.1). "
        "It is the partition's leader when a change empties the ISR, i.e. the last ISR member fenced (brokers are "
        "fenced one at a time, one_stale_broker_fenced_at_a_time), not the leader when the first went",
        "PartitionChangeBuilder.canElectLastKnownLeader; PartitionChangeBuilder.maybeUpdateLastKnownLeader "
        "(lastKnownElr := [partition.leader] on the change whose ISR is empty; cleared once a leader is elected)",
        modes=(KRAFT,)),
    "last_known_leader_elected_while_fenced": Rule(
        (4, 0), "KAFKA-19522: up to 4.0.2 the last known leader is elected even while fenced (seen on 4.0.0 in the "
        "metadata log, docs/findings.md); the model elects it only once unfenced, as 4.1.0 does, so a run "
        "on 4.0.x may show that election a few seconds before the model's",
        "PartitionChangeBuilder.canElectLastKnownLeader (no `return false` after its liveness test before 4.1.0)",
        modes=(KRAFT,), until=(4, 1), modelled=False),
    "reassignment_completes_once_adding_in_isr": Rule(
        (4, 3), "KAFKA-19975 (apache/kafka#21114): a reassignment completes once the ISR without the removing "
        "replicas holds every *adding* replica; a target replica that stays (neither added nor removed) may be "
        "out of the ISR, dead even. A move that shrinks the replica set (fewer adding than removing) still waits "
        "for every target replica. From 3.8 (KAFKA-15665, apache/kafka 756f44a3e58) to 4.2.1, and in ZooKeeper mode "
        "(KafkaController.isReassignmentComplete), every target replica must be in the ISR. Release read in "
        "kafka-metadata's bytecode: 4.2.0 and 4.2.1 still require all, 4.3.0 and 4.4.0 do not",
        "PartitionReassignmentReplicas.maybeCompleteReassignment (the containsAll(adding) test and the "
        "adding.size() < removing.size() guard), via PartitionChangeBuilder.completeReassignmentIfNeeded",
        modes=(KRAFT,)),
    "one_stale_broker_fenced_at_a_time": Rule(
        (3, 0), "KRaft brokers' sessions: the controller fences the stalest broker first, one at a time, each its own "
        "metadata change; a broker whose session lapsed but whose turn has not come is still active, so fencing a "
        "leader may elect it (read in 3.0, 3.3, 3.5, 3.7, 3.9 and trunk)",
        "ReplicationControlManager.maybeFenceOneStaleBroker, BrokerHeartbeatManager.findOneStaleBroker; "
        "generateLeaderAndIsrUpdates' isAcceptableLeader (ClusterControlManager.isActive: registration not fenced, "
        "not in controlled shutdown; the process may be dead)", modes=(KRAFT,)),
    "restarted_broker_serves_once_unfenced": Rule(
        (2, 8), "KIP-631 broker registration: a restarted broker (a new incarnation) is refused while its old session "
        "is valid, so the controller fences it when that lapses and elects another leader; the new process serves "
        "no produce or fetch before then: up to 3.4 BrokerServer.startup waits for the initial catch-up, which needs "
        "a registration, before opening its listeners; from 3.5 (apache/kafka 5d597b0fc81) it opens them only once "
        "the controller has unfenced it. So it leads nothing it led before, and no follower copies its log",
        "ClusterControlManager.registerBroker (DuplicateBrokerRegistrationException while "
        "heartbeatManager.hasValidSession and the incarnation differs); BrokerServer.startup "
        "(lifecycleManager.initialCatchUpFuture, setReadyToUnfence, then socketServer.enableRequestProcessing); "
        "BrokerLifecycleManager", modes=(KRAFT,)),
    # ---- transactions (checkers/lso.py, checkers/eos.py; transaction_rules below) -------------------------------
    "timed_out_transactions_aborted": Rule(
        (0, 11), "KIP-98: a transaction open longer than its transaction.timeout.ms is aborted by its coordinator, "
        "which looks for them every transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s) and writes "
        "the ABORT markers: a partition's last stable offset waits at most that long on a transaction its "
        "coordinator knows (lso_stuck's bound, history.eos.abort_bound_ms)",
        "TransactionStateManager.timedOutTransactions (Ongoing and txnStartTimestamp + txnTimeoutMs < now); "
        "TransactionCoordinator.abortTimedOutTransactions (prepareFenceProducerEpoch, then endTransaction ABORT)",
        modelled=False),
    "commit_marker_is_a_record": Rule(
        (0, 11), "KIP-98: a transaction's COMMIT or ABORT marker is a control record the partition leader appends at "
        "the coordinator's request (WriteTxnMarkers) after the client's commit, replicated and truncated like any "
        "record; a read_committed reader sees a transaction's records only behind it. So an unclean election can "
        "lose the marker of records it keeps: the judge excuses a lost committed transactional write (or an aborted "
        "one read) where a loss window holds the marker's append, from the commit call to the markers' deadline "
        "(ModelResult.marker_loss_causes, txn.commit_marker_lost / txn.abort_marker_lost)",
        "TransactionMarkerChannelManager / WriteTxnMarkersRequest; ReplicaManager.appendRecords (origin "
        "COORDINATOR); ProducerStateManager (ongoing transactions, completeTxn)", modelled=False),
    "describe_producers": Rule(
        (3, 0), "KIP-664: a partition's leader names the producers with a transaction open on it "
        "(DescribeProducers, the API from 2.8; Admin.describeProducers, which the final drain asks through, from "
        "3.0): lso_stuck names the open transaction's producer id from it",
        "ReplicaManager.activeProducerState / ProducerStateManager.activeProducers "
        "(currentTxnFirstOffset); KafkaAdminClient.describeProducers", modelled=False),
    "transaction_partition_verification": Rule(
        (3, 6), "KIP-890 part 1 (KAFKA-14402): before appending a transactional producer's first write to a "
        "partition, the leader asks the transaction coordinator whether that transaction is ongoing with the "
        "partition in it (transaction.partition.verification.enable, on by default), so a late write of a "
        "transaction that already ended is refused instead of opening a transaction no coordinator will end (a "
        "hanging transaction). Before 3.6 such a late write could hang a partition's LSO for good",
        "ReplicaManager.appendRecords (maybeStartTransactionVerificationForPartition); "
        "AddPartitionsToTxnManager (AddPartitionsToTxn verifyOnly); ProducerStateManager's VerificationStateEntry",
        modelled=False),
    "epoch_bump_per_transaction": Rule(
        (4, 0), "KIP-890 part 2 (KAFKA-14562), with the transaction.version feature at 2 (4.4.0's default for a new "
        "cluster; 1 keeps part 1 only): the coordinator bumps the producer epoch at every commit and abort and the "
        "markers carry it, so a late write of an ended transaction is fenced even when the same producer has "
        "begun its next transaction on that partition (which part 1's verification lets the late write join)",
        "TransactionVersion.supportsEpochBump; TransactionMetadata.prepareAbortOrCommit (epoch + 1 under TV2); "
        "TransactionCoordinator.handleEndTransaction", modes=(KRAFT,), modelled=False),
}


def applies(rule: str, version: str, mode: str = KRAFT) -> bool:
    """Whether `rule` (a key of RULES) holds in Kafka `version` run in metadata `mode`."""
    r, v = RULES[rule], version_tuple(version)
    return mode in r.modes and v >= r.since and (r.until is None or v < r.until)


def rules_used(version: str, mode: str = KRAFT) -> list[dict]:
    """The release rules that held for a run (the verdict's model.release_rules), and whether the model replays
    each: a reader sees which Kafka the run was judged as."""
    return [{"rule": name, "source": r.source, "modelled": r.modelled}
            for name, r in RULES.items() if applies(name, version, mode)]



@dataclass(frozen=True)
class TransactionRules:
    """What Kafka promises a transactional run of one release and transaction.version (None: not known)."""

    version: str
    transaction_version: int | None
    verification: bool          # KIP-890 part 1: a late write cannot open a transaction
    epoch_bump: bool            # KIP-890 part 2: a late write cannot join the producer's next transaction
    names_producer: bool        # the brokers name an open transaction's producer (DescribeProducers via Admin)

    def hanging(self) -> str:
        """How a transaction nobody ends could arise on this release, for lso_stuck's reason."""
        if not self.verification:
            return (f"Kafka {self.version} has no transaction verification (KIP-890 part 1 came in 3.6): a late "
                    "write of an ended transaction can open one its coordinator does not know, a hanging "
                    "transaction no timeout ends (KAFKA-14402)")
        tv = "unknown" if self.transaction_version is None else self.transaction_version
        bump = ("every commit and abort bumps the producer epoch (KIP-890 part 2), so a late write is fenced"
                if self.epoch_bump else "no epoch bump per transaction (KIP-890 part 2 needs transaction.version 2), "
                "so a late write may still join the producer's next transaction, but not open one")
        return (f"Kafka {self.version} verifies a transactional write's transaction with its coordinator first "
                f"(KIP-890 part 1) and runs transaction.version {tv}: {bump}; a transaction nobody ends then needs "
                "its coordinator to have lost it or its marker (KAFKA-20716: an unclean election)")


def transaction_rules(version: str, mode: str = KRAFT, transaction_version: int | None = None) -> TransactionRules:
    """The transaction rules of a run on `version`: transaction_version is the feature level the controller
    finalized (history.controller_log.transaction_version), which exists from 4.0 (0 before: no feature)."""
    if version_tuple(version) < (4, 0):
        transaction_version = 0
    return TransactionRules(version, transaction_version,
                            verification=applies("transaction_partition_verification", version, mode),
                            epoch_bump=applies("epoch_bump_per_transaction", version, mode)
                            and (transaction_version or 0) >= 2,
                            names_producer=applies("describe_producers", version, mode))
