"""The self-check's look at who was elected: every election in the cluster samples against the leader the model's
replays elected (checkers/model/elections.py), in verdict.json and `check`'s output."""
import json

import pandas as pd

from kafka_chaos.checkers.model import ModelConfig, run_model
from kafka_chaos.checkers.model.elections import leader_mismatches
from kafka_chaos.checkers.model.observed import model_disagreements
from kafka_chaos.harness.cli import main
from tests.checkers.conftest import MS, T, fault, read, sample, send, write_run
from tests.schemas import validate_run

S = 1000
CFG = ModelConfig(kafka_version="4.4.0", partitions=1, replication_factor=3, min_insync_replicas=2,
                  controllers=(101,), brokers=(1, 2, 3))
KILL_LEADER = [fault(10 * S, "start", "kill", [1])]


def kill_history(elected: int) -> pd.DataFrame:
    """Leader 1 of [1, 2, 3] killed at 10 s; at 19 s (its 9 s session lapsed) the samples show `elected` leading."""
    return pd.DataFrame([sample(t, 1, (1, 2, 3)) for t in range(0, 19 * S, 500)] +
                        [sample(t, elected, (2, 3)) for t in range(19 * S, 60 * S, 500)])


def model(faults, samples):
    return run_model(CFG, pd.DataFrame(faults) if faults else [], samples, t_begin=T, t_end=T + 60 * S * MS)


def test_the_broker_the_model_elects_is_no_disagreement():
    samples = kill_history(elected=2)       # Kafka elects the first live ISR member in replica order: 2, as the model
    assert leader_mismatches(model(KILL_LEADER, samples), samples) == []
    assert model_disagreements(model(KILL_LEADER, samples), samples) == []


def test_another_broker_elected_is_a_leader_mismatch_with_both_names_and_the_candidates():
    samples = kill_history(elected=3)
    (d,) = model_disagreements(model(KILL_LEADER, samples), samples)
    assert d["kind"] == "leader_mismatch" and d["partition"] == 0 and d["t_ns"] == T + 19 * S * MS
    assert (d["cluster_leader"], d["cluster_previous"], d["model_leader"]) == (3, 1, 1)
    assert [(c["broker"], c["t_ns"], c["how"]) for c in d["model_elected"]] == [(2, T + 19 * S * MS, "from the ISR")]
    assert set(d["model_elected"][0]["replays"]) == {"recorded", "late"}
    assert d["candidates"] == {"isr": [2, 3], "elr": [], "fenced": [1]}
    assert "the cluster elected broker 3" in d["detail"] and "elected broker 2 from the ISR" in d["detail"]
    assert "ISR [2, 3]" in d["detail"] and "fenced [1]" in d["detail"]


def test_a_leader_move_the_model_never_made_names_the_leader_it_kept():
    # no fault: the model keeps broker 2; the cluster moved leadership to 1 and 2 left the ISR (no preferred move)
    samples = pd.DataFrame([sample(t, 2, (1, 2, 3)) for t in range(0, 10 * S, 500)] +
                           [sample(t, 1, (1, 3)) for t in range(10 * S, 20 * S, 500)])
    (d,) = leader_mismatches(model([], samples), samples)
    assert (d["cluster_leader"], d["model_elected"], d["model_leader"]) == (1, [], 2)
    assert d["candidates"] == {"isr": [1, 2, 3], "elr": [], "fenced": []}
    assert "no replay of the model elected anyone within 10 s (it had broker 2 leading)" in d["detail"]


def test_a_preferred_leader_election_is_no_disagreement():
    # auto.leader.rebalance.enable: leadership goes back to the preferred replica, the old leader stays in the ISR
    samples = pd.DataFrame([sample(t, 2, (1, 2, 3)) for t in range(0, 10 * S, 500)] +
                           [sample(t, 1, (1, 2, 3)) for t in range(10 * S, 20 * S, 500)])
    assert model_disagreements(model([], samples), samples) == []


def test_an_unpredicted_unclean_election_is_reported_once():
    samples = pd.DataFrame([sample(t, 1, (1,), elr=[]) for t in range(0, 5 * S, 500)] +
                           [sample(t, 2, (2,), elr=[]) for t in range(5 * S, 10 * S, 500)])
    assert [d["kind"] for d in model_disagreements(model([], samples), samples)] == ["unpredicted_unclean_election"]


def test_check_writes_the_mismatch_into_verdict_json_and_prints_it_without_changing_the_verdict(tmp_path, capsys):
    sends = [send(v, offset=i, t=i * 100) for i, v in enumerate("abc")]
    reads = [read(v, offset=i, t=60 * S) for i, v in enumerate("abc")]
    cluster = [dict(r) for r in kill_history(elected=3).to_dict("records")]
    run = write_run(tmp_path / "mismatch", sends, reads, faults=KILL_LEADER, cluster=cluster, partitions=1,
                    kafka_version="4.4.0", brokers=[1, 2, 3], controllers=[101], start_ns=T, end_ns=T + 60 * S * MS)
    assert main(["check", str(run), "--engine", "pandas"]) == 0          # a finding about the model, no violation
    verdict = json.loads((run / "verdict.json").read_text())
    validate_run(run)
    assert verdict["valid"] is True
    (d,) = verdict["model_disagreements"]
    assert (d["kind"], d["cluster_leader"], d["t_s"]) == ("leader_mismatch", 3, 19.0)
    assert [c["broker"] for c in d["model_elected"]] == [2]
    out = capsys.readouterr().out
    assert "model disagreements: 1" in out
    assert "model disagreement: leader_mismatch, partition 0 at 19.0 s: the cluster elected broker 3" in out


def flicker_history(first_seen_s: int) -> pd.DataFrame:
    """Leader 1 killed at 10 s, broker 2 elected at its fencing (~19 s); a stale broker answers the sampler with the
    dead leader's old state until 30 s, except one sample at `first_seen_s` that shows broker 2."""
    stale = [sample(t, 2, (2, 3)) if t == first_seen_s * S else sample(t, 1, (1, 2, 3)) for t in range(0, 30 * S, 500)]
    return pd.DataFrame(stale + [sample(t, 2, (2, 3)) for t in range(30 * S, 60 * S, 500)])


def test_an_election_seen_at_the_models_time_then_hidden_by_stale_samples_is_no_disagreement():
    samples = flicker_history(first_seen_s=20)      # seen 1 s after the model's election, persisting only at 30 s
    assert leader_mismatches(model(KILL_LEADER, samples), samples) == []


def test_the_same_late_election_never_seen_near_the_models_time_is_a_mismatch():
    samples = flicker_history(first_seen_s=5)       # a flicker before the kill is no sight of the model's election
    (d,) = leader_mismatches(model(KILL_LEADER, samples), samples)
    assert (d["cluster_leader"], d["model_leader"], d["t_ns"]) == (2, 2, T + 30 * S * MS)


def stale_dead_leader_history() -> pd.DataFrame:
    """Leader 1 killed at 10 s, 2 elected at its fencing (~19 s); at 24-28 s a stale broker names 1 leader again,
    with its old ISR, then the samples show 2 again."""
    rows = [sample(t, 1, (1, 2, 3)) for t in range(0, 19 * S, 500)] + \
        [sample(t, 2, (2, 3)) for t in range(19 * S, 24 * S, 500)] + \
        [sample(t, 1, (1, 2, 3)) for t in range(24 * S, 28 * S, 500)] + \
        [sample(t, 2, (2, 3)) for t in range(28 * S, 60 * S, 500)]
    return pd.DataFrame(rows)


def test_a_sample_naming_a_dead_broker_the_new_leader_is_a_stale_answer_not_a_mismatch():
    samples = stale_dead_leader_history()
    assert leader_mismatches(model(KILL_LEADER, samples), samples) == []


def test_the_same_samples_with_broker_1_alive_are_a_mismatch():
    samples = stale_dead_leader_history()
    kinds = [(d["cluster_leader"], round((d["t_ns"] - T) / (S * MS))) for d in leader_mismatches(model([], samples),
                                                                                                   samples)]
    assert (1, 24) in kinds                     # nothing took 1 down: the cluster really moved leadership back
