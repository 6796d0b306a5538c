"""The eos kinds (checkers/eos.py) are excused only by a loss event whose window holds what the transactions
involved appended, when they appended it: a lost output by its records or its COMMIT marker, an aborted output read
by its ABORT marker, a second committed copy by a loss between the copies, the rest by the transactions' span (begin
to the markers' deadline after the end). Issue 48: a power loss 200 s later excused a g1a of the first second."""
from __future__ import annotations

import pandas as pd
import pytest

from kafka_chaos.checkers import eos
from kafka_chaos.checkers.model import ModelConfig, ModelResult, Window
from kafka_chaos.checkers.model.windows import Cause
from kafka_chaos.history.eos import input_value, output_value
from kafka_chaos.history.synthetic.eos import T0, eos_history

S = 1_000_000_000
BEGIN, CALLED, END = T0 + 20_000, T0 + 25_000, T0 + 28_000     # e0's transaction 2: inputs 0:4-5 and 3:4-5
DEADLINE = END + 5 * S                                          # MARKER_SLACK_MS after its end


@pytest.fixture
def clean():
    return eos_history(transactions=60, partitions=6, processors=3, per_partition=2)


def loss(start: int, end: int, partition: int = 0, cause_t: int | None = None) -> ModelResult:
    cfg = ModelConfig(kafka_version="4.1.0", partitions=6, replication_factor=3, min_insync_replicas=2,
                      acks=("all",))
    w = Window(partition, start, end, ("1", "all"), "power loss of broker 2: its unflushed writes of epoch 1 were "
               "gone", Cause("f5", end if cause_t is None else cause_t, "power loss of brokers 1, 2, 3"))
    return ModelResult(cfg, risk=[w], unavailable=[], truncations=[], events=[])


def lost_output(clean, model) -> pd.Series:
    txns, reads, meta = clean
    out = eos.find(txns, reads[~reads["value"].str.startswith("0-4-")], meta, model)
    assert out["kind"].tolist() == ["eos_lost"]
    return out.iloc[0]


def test_a_lost_output_is_excused_by_a_loss_of_its_records(clean):
    row = lost_output(clean, loss(BEGIN, CALLED - 1))
    assert (row["classification"], row["excuse"], row["cause_id"]) == ("allowed", "loss_event", "f5")


def test_a_lost_output_is_excused_by_a_loss_of_its_commit_marker_up_to_the_deadline(clean):
    assert lost_output(clean, loss(CALLED + 1, END))["excuse"] == "txn.commit_marker_lost"
    assert lost_output(clean, loss(DEADLINE, DEADLINE + S))["classification"] == "allowed"
    assert lost_output(clean, loss(DEADLINE + 1, DEADLINE + S))["classification"] == "violation"


def test_a_power_loss_200_s_later_or_on_another_partition_does_not_excuse_a_lost_output(clean):
    assert lost_output(clean, loss(T0 + 199 * S, T0 + 200 * S))["classification"] == "violation"
    assert lost_output(clean, loss(BEGIN, CALLED - 1, partition=1))["classification"] == "violation"


def aborted_read(clean, model, read_t: int = T0 + 60 * S) -> pd.Series:
    txns, reads, meta = clean
    ab = txns.iloc[[6]].assign(txn=99, outcome="aborted")            # e0's, begun, aborted as transaction 2 ended
    row = reads[(reads["phase"] == "final") & (reads["partition"] == 0)].iloc[[0]].assign(
        value=output_value(0, 0, input_value(1, 0, 0), "e0", 99), offset=10_000, t_ns=read_t)
    out = eos.find(pd.concat([txns, ab], ignore_index=True), pd.concat([reads, row], ignore_index=True), meta, model)
    assert out["kind"].tolist() == ["g1a"]
    return out.iloc[0]


def test_an_aborted_output_read_is_excused_only_by_the_loss_of_its_abort_marker(clean):
    row = aborted_read(clean, loss(CALLED + 1, END))
    assert (row["classification"], row["excuse"], row["cause_id"]) == ("allowed", "txn.abort_marker_lost", "f5")
    assert aborted_read(clean, loss(BEGIN, CALLED - 1))["classification"] == "violation"     # before the abort
    assert aborted_read(clean, loss(DEADLINE, DEADLINE + S))["classification"] == "allowed"
    assert aborted_read(clean, loss(DEADLINE + 1, DEADLINE + S))["classification"] == "violation"


def test_a_power_loss_200_s_after_an_aborted_output_was_read_does_not_excuse_the_g1a(clean):
    assert aborted_read(clean, loss(T0 + 199 * S, T0 + 200 * S))["classification"] == "violation"


def test_a_loss_after_the_aborted_output_was_read_does_not_excuse_the_read(clean):
    assert aborted_read(clean, loss(CALLED + 1, END), read_t=END)["classification"] == "allowed"
    assert aborted_read(clean, loss(CALLED + 1, END), read_t=END - 1)["classification"] == "violation"


def duplicate(clean, model) -> pd.Series:
    txns, reads, meta = clean
    extra = output_value(0, 4, input_value(1, 0, 4), "e0", 19)      # e0's transaction 19 wrote input 0:4 again
    row = reads[reads["phase"] == "final"].iloc[[0]].assign(value=extra, offset=10_000)
    out = eos.find(txns, pd.concat([reads, row], ignore_index=True), meta, model)
    assert out["kind"].tolist() == ["eos_duplicate"]
    return out.iloc[0]


def test_a_second_copy_is_excused_by_a_loss_between_the_copies(clean):
    second_end = T0 + 19 * 10_000 + 8_000
    row = duplicate(clean, loss(T0, BEGIN + 1, cause_t=BEGIN + 2))
    assert (row["classification"], row["excuse"]) == ("allowed", "eos.reprocessed_after_loss")
    assert duplicate(clean, loss(T0, BEGIN + 1, cause_t=second_end))["classification"] == "allowed"
    assert duplicate(clean, loss(T0, BEGIN + 1, cause_t=second_end + 1))["classification"] == "violation"
    assert duplicate(clean, loss(T0, BEGIN - 2, cause_t=BEGIN - 1))["classification"] == "violation"
    assert duplicate(clean, loss(T0 + 199 * S, T0 + 200 * S))["classification"] == "violation"


def test_the_other_kinds_are_excused_by_a_loss_in_their_transactions_span(clean):
    txns, reads, meta = clean
    txns.at[6, "read_offsets"] = [4, 6, 4, 5]                       # e0's transaction 2: int-poll-skip on 0
    for model, cls in ((loss(BEGIN, BEGIN + 1), "allowed"), (loss(DEADLINE + 1, DEADLINE + S), "violation"),
                       (loss(T0 + 199 * S, T0 + 200 * S), "violation")):
        out = eos.find(txns, reads, meta, model)
        assert out["kind"].tolist() == ["internal"] and out["classification"].tolist() == [cls]
