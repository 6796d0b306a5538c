"""A write was appended and acknowledged at some unknown moment between its invoke and its delivery report, so
the model judges the whole interval: any overlap with a risk window puts the write at risk."""
import pandas as pd
import pytest

from kafka_chaos.checkers.model import ModelConfig, ModelResult, Window

RISK = Window(partition=0, start_ns=100, end_ns=200, acks=("1",), reason="acks=1 leader cut off")


def model() -> ModelResult:
    cfg = ModelConfig(kafka_version="4.3.1", partitions=1, replication_factor=3, min_insync_replicas=2, acks=("1",))
    return ModelResult(cfg, risk=[RISK], unavailable=[], truncations=[], events=[])


@pytest.mark.parametrize("t_invoke,t_complete,expected", [
    (50, 90, "guaranteed"),      # acked before the window
    (50, 150, "at_risk"),        # report handled inside the window
    (50, 300, "at_risk"),        # a long retry spanning the whole window: the append may have been inside it
    (150, 300, "at_risk"),       # invoked inside the window, reported after it
    (250, 300, "guaranteed"),    # after the window
])
def test_the_whole_invoke_to_report_interval_is_judged(t_invoke, t_complete, expected):
    writes = pd.DataFrame({"partition": [0], "acks": ["1"], "t_invoke_ns": [t_invoke], "t_complete_ns": [t_complete]})
    assert model().classify(writes)["durability"].tolist() == [expected]
    assert model().durability(0, t_complete, "1", t_invoke)[0] == expected


def test_acks_all_writes_are_not_put_at_risk_by_an_acks_1_window():
    writes = pd.DataFrame({"partition": [0], "acks": ["all"], "t_invoke_ns": [50], "t_complete_ns": [300]})
    assert model().classify(writes)["durability"].tolist() == ["guaranteed"]


def test_a_cut_applied_over_half_a_second_risks_the_writes_acked_while_it_went_on():
    """Rules go on node by node: the followers may be cut before the clients, so the leader keeps acknowledging
    acks=1 writes it cannot replicate until the last rule is in (details.applied_ns)."""
    from kafka_chaos.checkers.model import FaultEffect, run_model, worst_case_onsets

    S, t0 = 1_000_000_000, 1_000 * 1_000_000_000
    drops = tuple((1, o) for o in (2, 3, 101)) + tuple((o, 1) for o in (2, 3, 101)) + ((1, "client"), ("client", 1))
    start = FaultEffect(t_ns=t0 + 10 * S, action="start", effect="net", nodes=(1,), fault="leader-isolate",
                       drops=drops, applied_ns=t0 + 10 * S + S // 2)
    heal = FaultEffect(t_ns=t0 + 30 * S, action="heal", effect="net", nodes=(1,), fault="leader-isolate", drops=drops)
    assert [len(e.drops) for e in worst_case_onsets([start, heal])] == [6, 2, 8]
    cfg = ModelConfig(kafka_version="4.3.1", partitions=1, replication_factor=3, min_insync_replicas=2,
                      acks=("1",), brokers=(1, 2, 3), controllers=(101,))
    model = run_model(cfg, [start, heal], t_begin=t0, t_end=t0 + 90 * S)
    assert model.durability(0, t0 + 10 * S + 4 * S // 10, "1", t0 + 10 * S + 3 * S // 10)[0] == "at_risk"
    assert model.durability(0, t0 + 5 * S, "1", t0 + 5 * S - 1000)[0] == "guaranteed"
    assert model.durability(0, t0 + 80 * S, "1", t0 + 80 * S - 1000)[0] == "guaranteed"
