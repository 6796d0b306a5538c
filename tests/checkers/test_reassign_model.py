"""The ISR model's `reassign` effect on hand-written timelines: Kafka's reassignment rules (KIP-455, KRaft's
PartitionReassignmentReplicas): new replicas are added, catch up and join the ISR, and only then are the old ones
removed; a leader that is moved away is replaced by an election among the target replicas."""
from kafka_chaos.checkers.model import FaultEffect, ModelConfig, run_model

S = 1_000_000_000
T0 = 1_000 * S


def cfg(min_isr=2):
    return ModelConfig(kafka_version="4.1.0", partitions=1, replication_factor=3, min_insync_replicas=min_isr,
                       elr_enabled=True, replica_lag_time_max_ms=5000, broker_session_timeout_ms=6000,
                       acks=("all",), brokers=(1, 2, 3, 4), controllers=(101,))


def move(action, t, before=(1, 2, 3), after=(4, 2, 3)):
    return FaultEffect(t_ns=t, action=action, effect="reassign", nodes=tuple(sorted(set(before) | set(after))),
                       fault="partition-reassign", partition=0, moves=(tuple(before), tuple(after)))


def kill(action, node, t):
    return FaultEffect(t_ns=t, action=action, effect="kill", nodes=(node,), fault="kill")


def events(model, kind):
    return [e for e in model.events if e["event"] == kind]


def test_the_new_replica_joins_the_isr_before_the_old_leader_leaves_and_a_target_replica_leads():
    model = run_model(cfg(), [move("start", T0 + 10 * S)], t_begin=T0, t_end=T0 + 60 * S)
    [started] = events(model, "reassign")
    assert started["replicas"] == [4, 2, 3, 1] and started["adding"] == [4] and started["removing"] == [1]
    [done] = events(model, "reassigned")
    assert done["replicas"] == [4, 2, 3] and done["t_ns"] >= started["t_ns"]   # the model copies logs at once
    isr = events(model, "isr")
    assert isr[0]["isr"] == [1, 2, 3, 4] and isr[-1]["isr"] == [2, 3, 4]   # added first, removed after
    leader = events(model, "leader")[-1]
    assert leader["leader"] in (4, 2, 3) and leader["how"] == "from the ISR"
    assert all(model.durability(0, T0 + t * S, "all")[0] == "guaranteed" for t in range(0, 60))


def test_heal_moves_the_replicas_back():
    model = run_model(cfg(), [move("start", T0 + 10 * S), move("heal", T0 + 30 * S)], t_begin=T0,
                      t_end=T0 + 80 * S)
    assert [e["replicas"] for e in events(model, "reassigned")] == [[4, 2, 3], [1, 2, 3]]


def test_a_move_waits_while_the_new_replica_is_down_and_completes_when_it_is_back():
    model = run_model(cfg(), [kill("start", 4, T0 + 5 * S), move("start", T0 + 10 * S), kill("heal", 4, T0 + 40 * S)],
                      t_begin=T0, t_end=T0 + 80 * S)
    [done] = events(model, "reassigned")
    assert done["t_ns"] > T0 + 40 * S
    assert not any(1 not in e["isr"] for e in events(model, "isr") if e["t_ns"] < T0 + 40 * S)   # old one kept


def test_the_leader_a_move_removed_acks_acks1_writes_until_it_learns_and_those_are_at_risk():
    # 4.0.0 here: the controller elected broker 3 at 52.911 s, broker 1 (moved away) acknowledged an acks=1 write
    # at 53.389 s and applied the change at 53.435 s; the write was lost. A deposed leader that stays up leads in
    # its own view until its metadata log brings the change (ReplicaManager.applyDelta).
    c = ModelConfig(kafka_version="4.1.0", partitions=1, replication_factor=3, min_insync_replicas=2,
                    elr_enabled=True, replica_lag_time_max_ms=5000, broker_session_timeout_ms=6000,
                    acks=("1",), brokers=(1, 2, 3, 4), controllers=(101,))
    model = run_model(c, [move("start", T0 + 10 * S)], t_begin=T0, t_end=T0 + 60 * S)
    [leader] = [e for e in events(model, "leader") if e["t_ns"] >= T0 + 10 * S]
    assert model.durability(0, leader["t_ns"] + S // 2, "1")[0] == "at_risk"
    assert model.durability(0, leader["t_ns"] + 10 * S, "1")[0] == "guaranteed"
    assert model.durability(0, leader["t_ns"] + S // 2, "all")[0] == "guaranteed"   # min ISR 2: no zombie acks=all


def cfg_at(version, min_isr=2):
    return ModelConfig(kafka_version=version, partitions=1, replication_factor=3, min_insync_replicas=min_isr,
                       elr_enabled=True, replica_lag_time_max_ms=5000, broker_session_timeout_ms=6000,
                       acks=("all",), brokers=(1, 2, 3, 4), controllers=(101,))


def dead_target_replica(version):
    """Broker 2, a replica the move keeps, dies and leaves the ISR; then [1, 2, 3] -> [4, 2, 3] is asked, and moved
    back while 2 is still dead; 2 returns at 70 s."""
    faults = [kill("start", 2, T0 + 5 * S), move("start", T0 + 30 * S), move("heal", T0 + 50 * S),
              kill("heal", 2, T0 + 70 * S)]
    return run_model(cfg_at(version), faults, t_begin=T0, t_end=T0 + 100 * S)


def test_from_4_3_a_move_completes_once_the_adding_replica_is_in_sync_though_a_kept_replica_is_dead():
    # 4.4.0, reassign-under-fire seed 5 (README): ISR [1, 3] with 2 dead; once 4 joined the controller logged
    # "isr: [1, 3] -> [3, 4], replicaSet: [4, 2, 3, 1] -> [4, 2, 3]" and elected 4. KAFKA-19975, in 4.3.0.
    model = dead_target_replica("4.4.0")
    done = events(model, "reassigned")
    assert [e["replicas"] for e in done] == [[4, 2, 3], [1, 2, 3]]
    assert T0 + 30 * S <= done[0]["t_ns"] < T0 + 50 * S and T0 + 50 * S <= done[1]["t_ns"] < T0 + 70 * S
    isr_then = [e["isr"] for e in events(model, "isr") if e["t_ns"] == done[0]["t_ns"]]
    assert isr_then[-1] == [3, 4]
    leaders = [(e["t_ns"], e["leader"]) for e in events(model, "leader") if e["t_ns"] >= T0 + 30 * S]
    assert leaders[0] == (done[0]["t_ns"], 4)           # the first target replica in the ISR, as Kafka elected
    assert leaders[1] == (done[1]["t_ns"], 1)           # moved back: 1 leads again, 2 still dead


def test_up_to_4_2_the_same_move_waits_for_the_dead_replica():
    # 4.2.1's maybeCompleteReassignment still wants every target replica in the ISR (KAFKA-15665).
    model = dead_target_replica("4.2.1")
    done = events(model, "reassigned")
    assert done and all(e["t_ns"] > T0 + 70 * S for e in done)
    assert not any(e["leader"] == 4 for e in events(model, "leader"))


def test_a_move_that_shrinks_the_replica_set_still_waits_for_every_target_replica():
    # [1, 2, 3] -> [1, 2]: nothing added, 3 removed; with 2 dead the ISR would shrink to [1], so Kafka waits
    # (the adding.size() < removing.size() guard of KAFKA-19975).
    faults = [kill("start", 2, T0 + 5 * S), move("start", T0 + 30 * S, after=(1, 2)), kill("heal", 2, T0 + 60 * S)]
    model = run_model(cfg_at("4.4.0"), faults, t_begin=T0, t_end=T0 + 100 * S)
    [done] = events(model, "reassigned")
    assert done["replicas"] == [1, 2] and done["t_ns"] > T0 + 60 * S


def test_the_completion_rule_switches_in_4_3_and_only_in_kraft():
    from kafka_chaos.base.versions import KRAFT, ZOOKEEPER
    from kafka_chaos.checkers.model.releases import applies
    rule = "reassignment_completes_once_adding_in_isr"
    assert [applies(rule, v) for v in ("3.9.2", "4.1.0", "4.2.1", "4.3.0", "4.4.0")] == [False] * 3 + [True] * 2
    assert not applies(rule, "3.9.2", ZOOKEEPER) and applies(rule, "4.3.0", KRAFT)
