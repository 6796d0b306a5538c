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
