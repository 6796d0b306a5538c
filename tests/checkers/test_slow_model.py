"""The ISR model's `slow` effect (a CPU-starved broker) on hand-written timelines.

A starved follower may lag out of the ISR (Partition.getOutOfSyncReplicas), miss heartbeats and be fenced, or keep
up: the model replays all three, puts at risk whatever any of them can lose, and is certain only of what all agree
on. Timelines follow slow-follower-then-leader-kill: replication factor 2, follower 2 slowed, leader 1 killed.
"""
from kafka_chaos.checkers.model import FaultEffect, ModelConfig, run_model

S = 1_000_000_000
T0 = 1_000 * S


def cfg(min_isr=1, unclean=False):
    return ModelConfig(kafka_version="4.1.0", partitions=1, replication_factor=2, min_insync_replicas=min_isr,
                       unclean_leader_election=unclean, elr_enabled=True, replica_lag_time_max_ms=5000,
                       broker_session_timeout_ms=6000, acks=("all",), brokers=(1, 2, 3), controllers=(101,))


def ev(effect, action, node, t):
    return FaultEffect(t_ns=t, action=action, effect=effect, nodes=(node,), fault=effect)


def slow_then_kill(slow_for=40, kill_at=25):
    return [ev("slow", "start", 2, T0 + 2 * S), ev("kill", "start", 1, T0 + kill_at * S),
            ev("kill", "heal", 1, T0 + 40 * S), ev("slow", "heal", 2, T0 + (2 + slow_for) * S)]


def run(min_isr=1, unclean=False, timeline=None):
    return run_model(cfg(min_isr, unclean), timeline or slow_then_kill(), t_begin=T0, t_end=T0 + 120 * S)


def test_a_lagging_slow_follower_leaves_the_isr_after_the_lag_time_and_keeps_its_session():
    model = run()
    shrink = next(e for e in model.events if e["event"] == "isr" and e["isr"] == [1])
    assert shrink["t_ns"] - (T0 + 2 * S) == 5 * S                     # replica.lag.time.max.ms
    assert not any(e["event"] == "fenced" and e["node"] == 2 for e in model.events)
    fenced_replay, keeping_up = model.alternatives
    assert any(e["event"] == "fenced" and e["node"] == 2 for e in fenced_replay.events)
    assert not any(e["event"] == "isr" and e["t_ns"] < T0 + 25 * S for e in keeping_up.events)


def test_with_unclean_election_writes_the_leader_acked_alone_are_at_risk_and_earlier_ones_are_not():
    model = run(unclean=True)
    status, reason = model.durability(0, T0 + 20 * S, "all")
    assert status == "at_risk" and "unclean" in reason
    assert model.durability(0, T0 - 5 * S, "all")[0] == "guaranteed"   # replicated before the quota
    assert model.predictions()["lost"] == "expected"


def test_without_unclean_election_the_partition_waits_for_its_leader_and_loses_nothing():
    model = run(unclean=False)
    assert all(model.durability(0, T0 + t * S, "all")[0] == "guaranteed" for t in range(0, 120))
    assert model.unwritable(0, T0 + 33 * S, T0 + 33 * S, "all")        # leader dead, follower out of sync
    assert not any(e["event"] == "leader" and e.get("how") == "uncleanly" for e in model.possible_events())


def test_min_isr_2_is_never_certainly_breached_by_a_slow_follower_that_may_keep_up():
    # The keeping-up replay keeps the follower in the ISR, so no NOT_ENOUGH_REPLICAS is certain (a starved
    # follower kept up for 12-19 s here before it was fenced); a kill of the other replica is certain.
    assert run(min_isr=2, timeline=[ev("slow", "start", 2, T0 + 2 * S), ev("slow", "heal", 2, T0 + 40 * S)]
               ).min_isr_windows() == []
    killed = run(min_isr=2, timeline=[ev("kill", "start", 2, T0 + 2 * S), ev("kill", "heal", 2, T0 + 40 * S)])
    assert killed.min_isr_windows()


def test_heal_lets_the_slow_follower_catch_up_and_rejoin():
    model = run(timeline=[ev("slow", "start", 2, T0 + 2 * S), ev("slow", "heal", 2, T0 + 30 * S)])
    isr = [e for e in model.events if e["event"] == "isr"]
    assert [e["isr"] for e in isr] == [[1], [1, 2]] and isr[-1]["t_ns"] >= T0 + 30 * S
