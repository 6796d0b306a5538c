"""A preferred-leader election the history records (effect `elect`, leader-churn) is replayed by the ISR model as
Kafka's controller makes it (PartitionChangeBuilder.electPreferredLeader, 4.1.0): the preferred replica leads if it
is acceptable and in the ISR, else nothing changes. It is a clean election, so acks=all writes stay guaranteed,
and the old leader's acks=1 tail the preferred replica had not fetched is at risk, blamed on that election and
naming the history row that asked for it.

The run: leader 1 of [1, 2, 3] (dedicated controller, min ISR 2); 1 killed at 10 s (2 elected when its session
lapses), restarted at 20 s and back in the ISR by 25 s; a preferred election at 40 s (history row 3)."""
import json

from kafka_chaos.checkers.model import run_model
from kafka_chaos.checkers.model.config import FaultEffect
from tests.checkers.test_isr_model import T0, S, cfg, kill, restart


def elect(t_s: float, row: int = 3) -> FaultEffect:
    t = T0 + int(t_s * S)
    return FaultEffect.from_row(t, "start", "leader-churn", [1, 2], json.dumps(
        {"effect": "elect", "election": "preferred", "preferred": 1, "previous": 2, "topic": "chaos",
         "partition": 0, "change": 2, "changes": 2, "applied_ns": t + S // 5}), row=row)


def churn(elect_at_s: float = 40.0):
    return run_model(cfg(acks=("1", "all"), brokers=(1, 2, 3), controllers=(101,)),
                     [kill(1, T0 + 10 * S), restart(1, T0 + 20 * S), elect(elect_at_s)],
                     t_begin=T0, t_end=T0 + 60 * S)


def elected(model):
    return [(round((e["t_ns"] - T0) / S, 1), e["leader"]) for e in model.events if e["event"] == "leader"]


def durability(model, t_s: float, acks: str):
    return model.durability(0, T0 + int(t_s * S), acks, T0 + int(t_s * S) - 100_000_000)


def test_the_elect_row_is_read_with_its_preferred_replica():
    assert elect(40).preferred == 1 and elect(40).partition == 0 and elect(40).effect == "elect"


def test_the_preferred_replica_back_in_the_isr_is_elected_when_the_history_says():
    assert elected(churn()) == [(19.0, 2), (40.0, 1)]


def test_the_old_leaders_last_acks_1_writes_are_at_risk_and_name_the_preferred_election_and_its_row():
    status, reason = durability(churn(), 39.9, "1")
    assert status == "at_risk"
    assert "preferred-leader election, f3" in reason
    causes = {w.cause.what for w in churn().risk if w.cause and w.start_ns <= T0 + int(39.9 * S) <= w.end_ns}
    assert any("preferred-leader election, f3" in c for c in causes), causes


def test_acks_all_writes_and_older_acks_1_writes_stay_guaranteed():
    model = churn()
    assert durability(model, 39.9, "all")[0] == "guaranteed"
    assert durability(model, 30.0, "1")[0] == "guaranteed"


def test_an_election_asked_while_the_preferred_replica_is_out_of_the_isr_changes_nothing():
    # at 21 s broker 1 has just restarted (20 s) and is not yet back in the ISR (25 s): Kafka answers
    # PREFERRED_LEADER_NOT_AVAILABLE; the model keeps its leader and says so in its events
    model = churn(elect_at_s=21.0)
    assert elected(model) == [(19.0, 2)]
    assert any(e["event"] == "preferred election refused" for e in model.events)
