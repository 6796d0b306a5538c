"""When a restarted or thawed broker is usable again (KRaft): the controller's logged unfence grants, read from the
node logs, and the model's rules and bounds without them, on synthetic histories.

Kafka: a restarted broker registers fenced and is unfenced only at a heartbeat that stops asking to stay fenced,
sent once it has started up (logs loaded and recovered, metadata published: BrokerServer.startup,
BrokerLifecycleManager.setReadyToUnfence), and whose metadata offset reached its registration record
(BrokerHeartbeatManager.calculateNextBrokerState); the leaderless partitions' elections, unclean ones included,
happen in that same controller event (ReplicationControlManager.handleBrokerUnfenced). A thawed broker kept its
registration: it is unfenced at its next heartbeat, but acts on what changed meanwhile only once it has read the
metadata log."""
from dataclasses import replace

import pandas as pd

from kafka_chaos.checkers.model import FaultEffect, ModelConfig, run_model
from kafka_chaos.checkers.model.config import METADATA_CATCHUP_LATE_NS, RESTART_UNFENCE_NS
from kafka_chaos.checkers.model.observed import model_disagreements
from kafka_chaos.history.controller_log import fencing_events, parse_line, unfence_times
from kafka_chaos.history.synthetic import fencing_line
from tests.checkers.conftest import MS, T, sample

S = 1_000_000_000
REAL = ("[2026-11-23 13:31:25,999] INFO [QuorumController id=101] The request from broker 2 to unfence has been "
        "granted because it has caught up with the offset of its register broker record 528. "
        "(org.apache.kafka.controller.BrokerHeartbeatManager)")


def cfg(**kw):
    base = ModelConfig(kafka_version="4.4.0", partitions=1, replication_factor=3, min_insync_replicas=1,
                       unclean_leader_election=True, elr_enabled=True, replica_lag_time_max_ms=5000,
                       broker_session_timeout_ms=6000, brokers=(1, 2, 3), controllers=(101,))
    return replace(base, **kw)


def proc(action, node, t, effect="kill"):
    return FaultEffect(t_ns=T + t * S, action=action, effect=effect, nodes=(node,), fault=effect)


# the cascade-kill of the README: followers 2 and 3 killed, then the leader 1; 2 (the most out of date) restarted
CASCADE = [proc("start", 2, 10), proc("start", 3, 18), proc("start", 1, 26),
           proc("heal", 2, 68), proc("heal", 3, 72), proc("heal", 1, 74)]
GRANTS = {2: [T + 85 * S], 3: [T + 128 * S], 1: [T + 127 * S]}     # as the controller logged them


def unclean(model):
    return [e for e in model.events if e["event"] == "leader" and e["how"] == "uncleanly"]


def test_the_controllers_fencing_lines_are_read_from_the_node_logs_once_each(tmp_path):
    assert parse_line(REAL).broker == 2 and parse_line(REAL).event == "unfenced"
    assert parse_line(REAL).t_ns == pd.Timestamp("2026-11-23 13:31:25.999", tz="UTC").value
    assert parse_line("[2026-11-23 13:31:25,999] INFO [Broker id=2] some other line") is None
    logs = tmp_path / "logs"
    logs.mkdir()
    lines = [fencing_line(T + 5 * S, 2, "fenced"), fencing_line(T + 40 * S, 2, "registered"),
             fencing_line(T + 61 * S + 7 * MS, 2, "unfenced")]
    (logs / "kc-x-c101.log").write_text("".join(lines))
    (logs / "kc-x-b1.log").write_text(lines[2] + "[2026-11-23 13:31:25,999] INFO [Broker id=1] nothing\n")
    (logs / "clients.log").write_text(REAL + "\n")           # the clients' log is not a node's
    assert [(e.broker, e.event, e.t_ns - T) for e in fencing_events(tmp_path)] == \
        [(2, "fenced", 5 * S), (2, "registered", 40 * S), (2, "unfenced", 61 * S + 7 * MS)]
    assert unfence_times(tmp_path) == {2: [T + 61 * S + 7 * MS]}
    assert unfence_times(tmp_path / "nowhere") == {}


def test_an_unclean_election_happens_at_the_logged_unfence_not_at_the_restart():
    model = run_model(cfg(), CASCADE, t_begin=T, t_end=T + 200 * S, unfences=GRANTS)
    for replay in [model] + model.alternatives:
        first = unclean(replay)[0]
        assert first["leader"] == 2 and 85 * S <= first["t_ns"] - T < 85 * S + S // 5
        assert "since_ns" not in first                       # the logged time is a fact: no span
    assert model.unwritable(0, T + 80 * S, T + 80 * S, "1")   # no leader while 2 starts up


def test_without_logs_the_election_is_predicted_anywhere_from_the_restart_to_the_start_up_bound():
    model = run_model(cfg(), CASCADE, t_begin=T, t_end=T + 200 * S)
    first = unclean(model)[0]
    assert first["t_ns"] - T < 69 * S and first["since_ns"] == T + 68 * S
    assert first["until_ns"] == T + 68 * S + RESTART_UNFENCE_NS
    late = unclean(model.alternatives[0])[0]                 # the late replay: the broker starts up slowly
    assert late["t_ns"] - T >= 68 * S + RESTART_UNFENCE_NS - S // 5
    assert model.unwritable(0, T + 120 * S, T + 120 * S, "1")


def _observed_unclean_at(t_s):
    rows = [sample(t, 1, (1,), elr=[]) for t in range(0, 26_000, 500)]
    rows += [sample(t, None, (), elr=[1]) for t in range(26_500, t_s * 1000, 500)]
    rows += [sample(t, 2, (2,), elr=[]) for t in range(t_s * 1000, 200_000, 500)]
    return pd.DataFrame(rows)


def test_the_cluster_electing_at_the_logged_unfence_agrees_with_the_model_and_a_wrong_grant_does_not():
    seen = _observed_unclean_at(91)          # the samples show it a few seconds after the controller's decision
    right = run_model(cfg(), CASCADE, t_begin=T, t_end=T + 200 * S, unfences=GRANTS)
    assert model_disagreements(right, seen) == []
    wrong = run_model(cfg(), CASCADE, t_begin=T, t_end=T + 200 * S, unfences={2: [T + 68 * S]})
    kinds = {d["kind"] for d in model_disagreements(wrong, seen)}
    assert {"predicted_unclean_election_not_seen", "unpredicted_unclean_election"} <= kinds


def test_without_logs_an_election_within_the_bound_agrees_and_one_long_after_it_does_not():
    model = run_model(cfg(), CASCADE, t_begin=T, t_end=T + 200 * S)
    assert model_disagreements(model, _observed_unclean_at(91)) == []
    assert "unpredicted_unclean_election" in {d["kind"] for d in model_disagreements(model, _observed_unclean_at(160))}


PAUSE = [proc("start", 1, 10, "pause"), proc("start", 2, 10, "pause"),
         proc("heal", 1, 55, "pause"), proc("heal", 2, 55, "pause")]


def test_a_thawed_broker_is_unfenced_at_its_next_heartbeat_but_follows_again_only_once_caught_up():
    model = run_model(cfg(min_insync_replicas=2, unclean_leader_election=False, broker_session_timeout_ms=9000),
                      PAUSE, t_begin=T, t_end=T + 150 * S)
    for replay in [model] + model.alternatives:
        back = [e for e in replay.events if e["event"] == "unfenced"]
        assert {e["node"] for e in back} == {1, 2} and all(55 * S <= e["t_ns"] - T < 56 * S for e in back)
    # acks=all waits for the thawed followers: METADATA_CATCHUP_NS in the recorded replay, up to
    # METADATA_CATCHUP_LATE_NS in the late one (seen 18 s after a 45 s pause)
    assert model.unwritable(0, T + 55 * S + METADATA_CATCHUP_LATE_NS - 2 * S, T + 55 * S + METADATA_CATCHUP_LATE_NS
                            - 2 * S, "all")
    assert not model.unwritable(0, T + 80 * S, T + 80 * S, "all")
    assert not model.unwritable(0, T + 70 * S, T + 70 * S, "1")      # broker 3 leads throughout


def test_a_thaw_with_logs_takes_the_logged_grant_even_when_it_precedes_the_heal_row():
    model = run_model(cfg(min_insync_replicas=2, unclean_leader_election=False, broker_session_timeout_ms=9000),
                      PAUSE, t_begin=T, t_end=T + 150 * S, unfences={1: [T + 54_800 * MS], 2: [T + 54_800 * MS]})
    back = [e for e in model.events if e["event"] == "unfenced"]
    assert {e["node"] for e in back} == {1, 2} and all(55 * S <= e["t_ns"] - T < 56 * S for e in back)


# The run of 2026-11-27 03:44 (README, "A quick restart is fenced"): the killed broker led a partition and came back
# 5.2 s later, within its 6 s session. The controller refused the new incarnation's registration until the old
# session lapsed, fenced it then ("Fencing broker 3 at epoch 14 because its session has timed out", 10.6 s after the
# start), and the partition elected from the rest of its ISR; the samples showed leader 2, ISR [2, 1].
QUICK = [proc("start", 1, 4), proc("heal", 1, 9)]       # back after 5 s, within the 6 s session


def test_a_broker_restarted_within_its_session_is_still_fenced_when_the_session_lapses():
    model = run_model(cfg(min_insync_replicas=2, unclean_leader_election=False), QUICK, t_begin=T, t_end=T + 60 * S)
    for replay in [model] + model.alternatives:
        fenced = [e for e in replay.events if e["event"] == "fenced"]
        assert [e["node"] for e in fenced] == [1]
        assert 10 * S <= fenced[0]["t_ns"] - T <= 10 * S + S // 2           # the last heartbeat at 4 s, plus 6 s
        elected = [e for e in replay.events if e["event"] == "leader"]
        assert [(e["leader"], e["how"]) for e in elected] == [(2, "from the ISR")]
        assert elected[0]["t_ns"] == fenced[0]["t_ns"]
    seen = pd.DataFrame([sample(t, 1, (1, 2, 3)) for t in range(0, 12_500, 500)] +
                        [sample(t, 2, (2, 3)) for t in range(12_500, 60_000, 500)])
    assert model_disagreements(model, seen) == []


def test_a_broker_paused_as_long_keeps_its_session_and_its_leadership():
    pause = [proc("start", 1, 4, "pause"), proc("heal", 1, 9, "pause")]
    model = run_model(cfg(min_insync_replicas=2, unclean_leader_election=False), pause, t_begin=T, t_end=T + 60 * S)
    assert [e for e in model.events if e["event"] in ("fenced", "leader")] == []
