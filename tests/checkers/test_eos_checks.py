"""Exactly-once checks (checkers/eos.py, checkers/eos_graph.py, checkers/lso.py) on synthetic histories: a clean one
has no anomaly, and each injected anomaly is found exactly (the kinds it implies by construction named)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from kafka_chaos.checkers import eos, lso
from kafka_chaos.checkers.eos_graph import WR, WW, find_cycles
from kafka_chaos.history.eos import input_value, output_value
from kafka_chaos.history.synthetic.eos import eos_history


@pytest.fixture
def clean():
    return eos_history(transactions=60, partitions=6, processors=3, per_partition=2)


def kinds(out: pd.DataFrame) -> dict[str, int]:
    return out["kind"].value_counts().to_dict()


def txn_index(txns, processor, n):
    return int(txns.index[(txns["processor"] == processor) & (txns["txn"] == n)][0])


def test_a_clean_history_has_no_eos_anomaly(clean):
    assert eos.find(*clean).empty


def test_the_table_as_read_back_from_parquet_with_unknown_write_offsets(clean, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kafka_chaos.history.schema import EOS_SCHEMA

    txns, reads, meta = clean
    ab = txns.iloc[[0]].assign(txn=99, outcome="aborted", write_offsets=[[None, None, None, None]])
    table = pa.Table.from_pandas(pd.concat([txns, ab], ignore_index=True), schema=EOS_SCHEMA, preserve_index=False)
    pq.write_table(table, tmp_path / "eos.parquet")
    assert eos.find(pd.read_parquet(tmp_path / "eos.parquet"), reads, meta).empty


def test_a_lost_output_is_eos_lost_alone(clean):
    txns, reads, meta = clean
    gone = reads["value"].str.startswith("0-4-")             # input 0:4, first of its transaction's pair
    out = eos.find(txns, reads[~gone], meta)
    assert kinds(out) == {"eos_lost": 1} and (out["partition"].iloc[0], out["offset"].iloc[0]) == (0, 4)


def test_a_second_committed_copy_is_eos_duplicate(clean):
    txns, reads, meta = clean
    extra = output_value(0, 4, input_value(1, 0, 4), "e0", 19)      # e0's last transaction wrote it again
    row = reads[reads["phase"] == "final"].iloc[[0]].assign(value=extra, offset=10_000)
    out = eos.find(txns, pd.concat([reads, row], ignore_index=True), meta)
    assert kinds(out) == {"eos_duplicate": 1} and out["offset"].iloc[0] == 4


def test_outputs_swapped_within_a_transaction_are_out_of_order(clean):
    txns, reads, meta = clean
    a, b = reads["value"].str.startswith("3-6-"), reads["value"].str.startswith("3-7-")
    fin = reads["phase"] == "final"
    reads = reads.copy()
    reads.loc[a & fin, "offset"], reads.loc[b & fin, "offset"] = (reads.loc[b & fin, "offset"].iloc[0],
                                                                  reads.loc[a & fin, "offset"].iloc[0])
    out = eos.find(txns, reads, meta)
    assert kinds(out) == {"eos_out_of_order": 1} and out["partition"].iloc[0] == 3


def test_an_offset_committed_past_the_output_is_eos_offset_ahead(clean):
    txns, reads, meta = clean
    i = txn_index(txns, "e1", 19)                                  # the last of partition 1 and 4
    txns.at[i, "commit_offsets"] = [o + 3 for o in txns.at[i, "commit_offsets"]]
    out = eos.find(txns, reads, meta)                              # the brokers' answer stays 40
    assert kinds(out) == {"eos_offset_ahead": 2} and set(out["partition"]) == {1, 4}


def test_outputs_above_the_groups_final_offset_are_eos_offset_behind(clean):
    txns, reads, meta = clean
    meta = dict(meta, committed=dict(meta["committed"], **{"2": 38}))
    out = eos.find(txns, reads, meta)
    assert kinds(out) == {"eos_offset_behind": 1} and (out["partition"].iloc[0], out["offset"].iloc[0]) == (2, 38)


def test_an_aborted_transactions_output_read_is_g1a(clean):
    txns, reads, meta = clean
    ab = txns.iloc[[0]].assign(txn=99, outcome="aborted", t_commit_ns=None)
    row = reads[reads["phase"] == "final"].iloc[[0]].assign(value=output_value(0, 0, input_value(1, 0, 0), "e0", 99),
                                                            offset=10_000)
    out = eos.find(pd.concat([txns, ab], ignore_index=True), pd.concat([reads, row], ignore_index=True), meta)
    assert kinds(out) == {"g1a": 1} and out["consumer"].iloc[0] == "final"


def test_starting_at_an_offset_only_an_aborted_transaction_committed_is_g1a(clean):
    txns, reads, meta = clean
    i = txn_index(txns, "e2", 5)                                   # reads 2:10-11 and 5:10-11
    ab = txns.iloc[[i]].assign(txn=99, outcome="aborted", commit_offsets=[[11, 11]])
    txns.at[i, "read_offsets"] = [11, 12, 11, 12]                  # as if it started where the abort left off
    out = eos.find(pd.concat([txns, ab], ignore_index=True), reads, meta)
    assert kinds(out)["g1a"] == 2 and set(out.loc[out["kind"] == "g1a", "offset"]) == {11}


def test_no_g1a_when_an_unjournaled_transaction_in_the_drain_committed_that_offset(clean):
    txns, reads, meta = clean
    i = txn_index(txns, "e2", 5)
    ab = txns.iloc[[i]].assign(txn=98, outcome="aborted")          # an attempt of the same batch, aborted
    txns = pd.concat([txns.drop(index=i), ab], ignore_index=True)    # the retry's line never reached the journal
    assert eos.find(txns, reads, meta).empty


def test_a_gap_in_a_transactions_own_reads_is_internal(clean):
    txns, reads, meta = clean
    i = txn_index(txns, "e0", 3)
    txns.at[i, "read_offsets"] = [6, 8, 6, 7]
    txns.at[i, "write_offsets"] = [9, 10, 10, 9]
    out = eos.find(txns, reads, meta)
    assert kinds(out) == {"internal": 2}
    assert sorted(r.split(":")[0] for r in out["reason"]) == ["int-nonmonotonic-send", "int-poll-skip"]


def test_a_live_read_before_the_commit_call_is_precommitted_read(clean):
    txns, reads, meta = clean
    reads = reads.copy()
    early = (reads["phase"] == "live") & reads["value"].str.endswith("@e1.7")
    reads.loc[early, "t_ns"] = txns.at[txn_index(txns, "e1", 7), "t_begin_ns"] + 1
    out = eos.find(txns, reads, meta)
    assert kinds(out) == {"precommitted_read": 1} and out["producer"].isna().all()


def test_two_transactions_ordered_both_ways_in_two_output_logs_are_g0(clean):
    txns, reads, meta = clean
    fin = reads[reads["phase"] == "final"]
    t1, t2 = ("e0", 5), ("e1", 5)          # e0 writes partitions 0 and 3, e1 partitions 1 and 4
    first = {t: fin[fin["value"].str.endswith(f"@{t[0]}.{t[1]}")].groupby("partition")["offset"].min()
             for t in (t1, t2)}
    # a copy of t2 in partition 0 just before t1's outputs, and of t1 in partition 1 just before t2's (in the marker
    # slot of the transaction before): no input of the run (input partition 99), so no other kind is touched
    rows = fin.iloc[[0, 0]].assign(partition=[0, 1], offset=[first[t1][0] - 1, first[t2][1] - 1],
                                   value=[output_value(99, 0, "a", *t2), output_value(99, 1, "b", *t1)])
    out = eos.find(txns, pd.concat([reads, rows], ignore_index=True), meta)
    assert kinds(out) == {"g0": 1}
    assert "e0.5" in out["reason"].iloc[0] and "e1.5" in out["reason"].iloc[0]


def test_a_predicted_unclean_election_holding_the_lost_output_excuses_it(clean):
    """More cases, and the counter-cases, in test_eos_excuses.py."""
    txns, reads, meta = clean
    gone = reads["value"].str.startswith("0-4-")
    begin = int(txns.at[txn_index(txns, "e0", 2), "t_begin_ns"])        # the transaction that wrote it
    out = eos.find(txns, reads[~gone], meta, unclean(0, begin, begin + 1000))
    assert out["classification"].tolist() == ["allowed"] and "election p0 e4" in out["reason"].iloc[0]
    assert eos.find(txns, reads[~gone], meta, unclean(1, begin, begin + 1000))["classification"].tolist() == \
        ["violation"]


def unclean(partition: int, start: int, end: int):
    from kafka_chaos.checkers.model import ModelConfig, ModelResult, Window
    from kafka_chaos.checkers.model.windows import Cause
    cfg = ModelConfig(kafka_version="3.9.2", partitions=6, replication_factor=3, min_insync_replicas=1,
                      acks=("all",))
    w = Window(partition, start, end, ("1", "all"), "unclean election of broker 2",
               Cause(f"election p{partition} e4", end + 1, "unclean election"))
    return ModelResult(cfg, risk=[w], unavailable=[], truncations=[], events=[])


def test_cycles_on_integer_ids_g0_g1c_and_a_dag():
    # 0 -> 1 -> 2 -> 0 by ww: G0; 3 -ww-> 4 -wr-> 3: G1c; 5 -> 6 -> 7: none
    src, dst, kind = [0, 1, 2, 3, 4, 5, 6], [1, 2, 0, 4, 3, 6, 7], [WW, WW, WW, WW, WR, WW, WR]
    found = sorted(find_cycles(8, src, dst, kind), key=lambda c: c["kind"])
    assert [(c["kind"], c["nodes"]) for c in found] == [("g0", [0, 1, 2]), ("g1c", [3, 4])]
    assert found[1]["cycle"] == [(4, 3, WR), (3, 4, WW)]
    assert find_cycles(8, [5, 6], [6, 7], [WW, WR]) == []


def test_a_write_cycle_inside_a_larger_read_cycle_is_g0_and_the_rest_g1c():
    found = find_cycles(4, [0, 1, 1, 2], [1, 0, 2, 0], [WW, WW, WR, WW])
    assert sorted(c["kind"] for c in found) == ["g0", "g1c"]


def test_a_stuck_last_stable_offset_after_the_heal_is_lso_stuck():
    t = np.arange(0, 60) * 1_000_000_000
    ok = pd.DataFrame({"t_ns": t, "partition": 0, "high_watermark": 100 + np.arange(60), "last_stable_offset":
                       100 + np.arange(60) - 3})                       # open transactions, moving on
    stuck = pd.DataFrame({"t_ns": t, "partition": 1, "high_watermark": 500, "last_stable_offset": 480})
    samples = pd.concat([ok, stuck], ignore_index=True)
    out = lso.find(samples, healed_ns=int(t[10]), timeout=20000)
    assert out["kind"].tolist() == ["lso_stuck"] and out["partition"].tolist() == [1]
    assert out["offset"].tolist() == [480] and out["classification"].tolist() == ["violation"]
    assert lso.find(samples, healed_ns=int(t[45]), timeout=20000).empty      # healed too late to judge
    assert lso.find(samples, healed_ns=None, timeout=20000).empty            # a fault never healed
    faults = pd.DataFrame({"t_ns": [1, 5], "action": ["start", "heal"], "fault": "kill", "details": "{}"})
    assert lso.healed_at(faults) == 5 and lso.healed_at(faults.iloc[:1]) is None
