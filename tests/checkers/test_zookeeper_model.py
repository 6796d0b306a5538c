"""The ISR model in ZooKeeper mode (Kafka up to 3.9) on hand-written timelines: sessions with ZooKeeper decide when a
broker is gone, a broker is the controller, unclean election is honoured, and the release rules are named."""
import pandas as pd
import pytest

from kafka_chaos.checkers.model import FaultEffect, ModelConfig, run_model
from kafka_chaos.checkers.model.releases import applies, rules_used

S = 1_000_000_000
T0 = 1_000 * S
ZK = 201


def cfg(acks=("all",), min_isr=2, unclean=False, version="3.9.2", session_ms=18_000, **kw):
    return ModelConfig(kafka_version=version, partitions=1, replication_factor=3, min_insync_replicas=min_isr,
                       unclean_leader_election=unclean, elr_enabled=False, acks=acks, brokers=(1, 2, 3),
                       broker_session_timeout_ms=session_ms, replica_lag_time_max_ms=10_000,
                       metadata_mode="zookeeper", zookeeper=(ZK,), **kw)


def kill(node, t, action="start"):
    return FaultEffect(t_ns=t, action=action, effect="kill", nodes=(node,), fault="kill")


def isolate(node, t, action="start", others=(1, 2, 3, ZK), client=True):
    rest = [n for n in others if n != node] + (["client"] if client else [])
    drops = [(node, o) for o in rest] + [(o, node) for o in rest]
    return FaultEffect(t_ns=t, action=action, effect="net", nodes=(node,), fault="isolate", drops=tuple(drops))


def leader_events(model):
    return [e for e in model.events if e["event"] == "leader"]


def samples(controller):
    """One cluster sample: leader 1, full ISR, and the controller broker the sampler read."""
    return pd.DataFrame({"t_ns": [T0], "partition": [0], "leader": [1], "isr": [[1, 2, 3]],
                         "high_watermark": [0], "controller": [controller]})


def test_a_killed_leader_is_replaced_only_when_its_zookeeper_session_expires():
    model = run_model(cfg(), [kill(1, T0 + 10 * S)], samples(3), t_begin=T0, t_end=T0 + 60 * S)
    elected = leader_events(model)
    assert elected and elected[0]["leader"] == 2                 # first live ISR replica in assignment order
    assert elected[0]["t_ns"] - (T0 + 10 * S) == pytest.approx(18 * S, abs=0.3 * S)   # the 18 s session
    fenced = [e for e in model.events if e["event"] == "fenced"]
    assert fenced[0]["node"] == 1 and "ZooKeeper session" in fenced[0]["why"]
    window = next(w for w in model.unavailable if "no reachable leader" in w.reason)
    assert window.end_ns - window.start_ns == pytest.approx(18 * S + 1 * S, abs=0.3 * S)


def test_a_shorter_session_fails_over_sooner():
    model = run_model(cfg(session_ms=6_000), [kill(1, T0 + 10 * S)], samples(3), t_begin=T0, t_end=T0 + 60 * S)
    assert leader_events(model)[0]["t_ns"] - (T0 + 10 * S) == pytest.approx(6 * S, abs=0.3 * S)


def test_acks_1_writes_to_a_zombie_leader_cut_from_the_cluster_are_at_risk_and_acks_all_are_not():
    timeline = [isolate(1, T0 + 10 * S, client=False), isolate(1, T0 + 40 * S, "heal", client=False)]
    one = run_model(cfg(acks=("1",), min_isr=1), timeline, t_begin=T0, t_end=T0 + 200 * S)
    # the isolated leader keeps its role until the controller's LeaderAndIsr reaches it, i.e. after the heal
    assert one.durability(0, T0 + 15 * S, "1")[0] == "at_risk"
    assert one.predictions()["lost"] == "expected"
    every = run_model(cfg(acks=("all",), min_isr=2), timeline, t_begin=T0, t_end=T0 + 200 * S)
    assert all(every.durability(0, T0 + t * S, "all")[0] == "guaranteed" for t in range(200))


def test_with_zookeeper_cut_off_nobody_is_fenced_until_it_returns_and_then_nothing_is_lost():
    timeline = [isolate(ZK, T0 + 10 * S), isolate(ZK, T0 + 40 * S, "heal")]
    model = run_model(cfg(acks=("all",)), timeline, t_begin=T0, t_end=T0 + 120 * S)
    assert not leader_events(model)            # no controller can act while ZooKeeper is gone; all re-register
    assert model.predictions()["lost"] == "never"


def test_when_the_leader_was_the_controller_its_successor_decides_after_its_failover():
    from kafka_chaos.checkers.model.zookeeper import ZK_CONTROLLER_FAILOVER_NS

    model = run_model(cfg(), [kill(1, T0 + 10 * S)], samples(1), t_begin=T0, t_end=T0 + 120 * S)
    # broker 1 led and was controller: its session lapses, broker 2 takes /controller and elects itself, but the
    # brokers (and clients) act on it only once the new controller's failover is done
    assert leader_events(model)[0]["leader"] == 2
    window = next(w for w in model.unavailable if "no reachable leader" in w.reason)
    assert window.end_ns - window.start_ns == pytest.approx(18 * S + ZK_CONTROLLER_FAILOVER_NS + 1 * S, abs=0.3 * S)


def test_unclean_election_is_honoured_in_zookeeper_mode_even_before_39():
    timeline = [kill(2, T0 + 10 * S), kill(3, T0 + 10 * S), kill(1, T0 + 80 * S), kill(2, T0 + 100 * S, "heal")]
    model = run_model(cfg(acks=("all",), min_isr=1, unclean=True, version="2.8.2"), timeline,
                      t_begin=T0, t_end=T0 + 200 * S)
    assert model.config.unclean_honoured
    assert any(e["event"] == "leader" and e["how"] == "uncleanly" for e in model.events)
    assert model.durability(0, T0 + 60 * S, "all")[0] == "at_risk"


def test_release_rules_by_version_and_mode():
    assert applies("unclean_election_in_zookeeper", "2.0.1", "zookeeper")
    assert not applies("unclean_election_in_kraft", "3.8.0", "kraft")
    assert not applies("zookeeper_controller", "4.0.0", "zookeeper")          # ZooKeeper mode removed in 4.0
    assert not applies("isr_change_through_controller", "2.4.1", "zookeeper")  # KIP-497 came in 2.7
    assert applies("isr_change_through_controller", "2.8.2", "zookeeper")
    old = {r["rule"] for r in rules_used("1.1.1", "zookeeper")}
    assert "leader_epoch_truncation" in old and "epoch_end_offset_for_older_epochs" not in old   # KIP-279: 2.0
    new = {r["rule"] for r in rules_used("4.1.0", "kraft")}
    assert {"eligible_leader_replicas", "unclean_election_in_kraft"} <= new and "zookeeper_controller" not in new
    # KAFKA-19522: 4.0.x elects a fenced last known leader; 4.1.0 fixed it (named, not replayed)
    assert applies("last_known_leader_elected_while_fenced", "4.0.2") and "last_known_leader_elected_while_fenced" \
        not in new
    assert cfg().as_dict()["metadata_mode"] == "zookeeper"
    assert {r["rule"] for r in cfg().as_dict()["release_rules"]} == {r["rule"] for r in rules_used("3.9.2",
                                                                                                   "zookeeper")}


def test_before_27_an_isolated_leader_that_still_reaches_zookeeper_can_shrink_its_isr():
    cut = [(1, 2), (2, 1), (1, 3), (3, 1)]                    # followers gone, ZooKeeper and the clients reachable
    f = FaultEffect(t_ns=T0 + 10 * S, action="start", effect="net", nodes=(1,), fault="leader-cut", drops=tuple(cut))
    old = run_model(cfg(version="2.4.1", session_ms=6_000), [f], t_begin=T0, t_end=T0 + 60 * S)
    assert any(e["event"] == "isr" and e["isr"] == [1] for e in old.events)      # written to ZooKeeper directly


def test_a_deposed_leader_back_from_an_expired_session_is_told_only_after_the_controller_handled_its_return():
    from kafka_chaos.checkers.model.zookeeper import ZK_BROKER_STARTUP_NS

    timeline = [isolate(1, T0 + 10 * S), isolate(1, T0 + 40 * S, "heal")]
    model = run_model(cfg(acks=("1",), min_isr=1), timeline, samples(3), t_begin=T0, t_end=T0 + 200 * S)
    zombie = [w for w in model.risk if "zombie leader 1" in w.reason]
    # it re-registers at the heal; its LeaderAndIsr comes once the controller handled that (Kafka bounds neither)
    assert zombie and max(w.end_ns for w in zombie) == pytest.approx(T0 + 40 * S + ZK_BROKER_STARTUP_NS, abs=0.5 * S)


# -- a restarted process is a new incarnation: its old session's znode keeps it out until that session expires ------

def process(effect, node, t_s, action="start"):
    return FaultEffect(t_ns=int(T0 + t_s * S), action=action, effect=effect, nodes=(node,), fault=effect)


def down_and_back(effect, down_s, back_s, acks=("all",)):
    """Leader 1 (not the controller) down at `down_s` and started again at `back_s`; 18 s sessions."""
    timeline = [process(effect, 1, down_s), process(effect, 1, back_s, "heal")]
    return run_model(cfg(acks=acks), timeline, samples(3), t_begin=T0, t_end=T0 + 200 * S)


def happened(model, event, node=None):
    """(time in s from T0, event) pairs of the recorded replay and the late one."""
    return [(round((e["t_ns"] - T0) / S, 1), e.get("leader", e.get("node"))) for e in model.possible_events()
            if e["event"] == event and (node is None or e.get("node", e.get("leader")) == node)]


def test_a_leader_power_cut_and_back_within_its_session_does_not_lead_with_its_cut_log_so_acks_all_is_guaranteed():
    model = down_and_back("power_loss", 50, 52)
    # its last heartbeat reached ZooKeeper at 49.9 s: the old session expires at 68 s, and only then the controller
    # elects from the rest of the ISR, which held the write acknowledged at 30 s (gone from broker 1's page cache)
    assert happened(model, "leader") == [(68.0, 2), (68.0, 2)]
    assert model.durability(0, T0 + 30 * S, "all")[0] == "guaranteed"
    assert model.loss_window(0, T0 + 29 * S, T0 + 30 * S) is None       # no power loss to excuse its loss with


def test_an_acks_1_write_in_the_last_replication_slack_before_the_power_cut_stays_at_risk():
    model = down_and_back("power_loss", 50, 52, acks=("1",))
    state, reason = model.durability(0, T0 + 49.5 * S, "1")
    assert state == "at_risk" and "acks=1 tail of epoch 0" in reason
    tail = next(w for w in model.risk if w.start_ns <= T0 + 49.5 * S <= w.end_ns and "1" in w.acks)
    assert (tail.cause.id, tail.cause.t_ns) == ("election p0 e1", T0 + 68 * S)    # at the old session's expiry
    assert model.durability(0, T0 + 30 * S, "1")[0] == "guaranteed"      # long fetched by the next leader


def test_a_process_whose_registration_meets_the_old_znode_exits_and_a_slower_one_registers_after_the_expiry():
    model = down_and_back("power_loss", 50, 52)
    recorded, late = model.events, model.alternatives[0].events
    # recorded: its start-up reaches KafkaZkClient.registerBroker at once, gets NODEEXISTS and Kafka exits;
    # late: start-up takes RESTART_UNFENCE_NS, past the expiry, so it registers as any broker back from one
    assert [(e["t_ns"], e["node"]) for e in recorded if e["event"] == "exited"] == [(T0 + 52 * S, 1)]
    assert not any(e["event"] == "unfenced" for e in recorded)
    assert [e["t_ns"] for e in late if e["event"] == "unfenced"] == [T0 + 68 * S + S // 10]
    assert not any(e["event"] == "exited" for e in late)


def test_a_restart_just_before_the_old_session_expires_is_refused_and_one_just_after_registers_at_once():
    before, after = down_and_back("power_loss", 50, 67.5), down_and_back("power_loss", 50, 68.5)
    assert happened(before, "exited") == [(67.5, 1)] and happened(before, "leader") == [(68.0, 2), (68.0, 2)]
    assert not happened(after, "exited") and happened(after, "unfenced") == [(68.5, 1), (68.5, 1)]
    for model in (before, after):
        assert model.durability(0, T0 + 30 * S, "all")[0] == "guaranteed"


def test_a_killed_leader_back_within_its_session_is_replaced_at_the_old_sessions_expiry_and_its_acks_1_tail_at_risk():
    model = down_and_back("kill", 50, 52, acks=("1",))
    assert happened(model, "fenced", 1) == [(68.0, 1), (68.0, 1)] and happened(model, "leader") == [(68.0, 2)] * 2
    assert model.durability(0, T0 + 49.5 * S, "1")[0] == "at_risk"
    assert model.durability(0, T0 + 30 * S, "1")[0] == "guaranteed"


def test_a_cleanly_stopped_leader_hands_over_at_the_stop_and_registers_again_at_its_restart():
    model = down_and_back("stop", 50, 52, acks=("1", "all"))
    # a controlled shutdown closes the session, so /brokers/ids/1 is gone at once and the restart registers
    assert happened(model, "leader") == [(50.0, 2), (50.0, 2)]
    assert happened(model, "unfenced", 1) == [(52.0, 1), (52.0, 1)] and not happened(model, "exited")
    assert model.durability(0, T0 + 30 * S, "all")[0] == "guaranteed"
    assert model.durability(0, T0 + 49.5 * S, "1")[0] == "at_risk"
