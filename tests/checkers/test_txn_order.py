"""The transaction order check (checkers/txns.py `txn_out_of_order`) on synthetic histories: a committed
transaction's writes to one partition must sit in the final drain in the order they were sent."""
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kafka_chaos.checkers.txns import out_of_order
from kafka_chaos.history.schema import TXNS_SCHEMA
from tests.checkers.conftest import MS, T, read, send, write_run
from tests.checkers.test_txn_checks import checked, txn


def order_run(tmp_path, name, swap: dict[str, int] | None = None, outcome="committed"):
    """Transaction 0 writes 0-0..0-8 round robin over 3 partitions (3 values each, offsets 0, 1, 2) and ends
    `outcome`; transaction 1 (0-9..0-11) commits. `swap`: value -> offset overrides (its send is acked there too)."""
    swap = swap or {}
    sends, reads = [], []
    for seq in range(12):
        p, value = seq % 3, f"0-{seq}"
        offset = swap.get(value, seq // 3)
        if seq < 9 and outcome == "aborted":
            row = send(value, partition=p, outcome="fail", t=seq)
            row["error"] = "_TXN_ABORTED"
            sends.append(row)
            continue
        sends.append(send(value, partition=p, offset=offset, t=seq))
        reads.append(read(value, partition=p, offset=offset))
    run = write_run(tmp_path / name, sends, reads, consumer_mode="assign")
    pq.write_table(pa.Table.from_pylist([txn(0, 0, 9, outcome, 10), txn(1, 9, 3, "committed", 20)],
                                        schema=TXNS_SCHEMA), run / "history/txns.parquet")
    return run


def test_writes_in_send_order_are_valid(tmp_path):
    code, verdict, _ = checked(order_run(tmp_path, "in-order"))
    assert code == 0 and verdict["valid"] and verdict["anomalies"]["txn_out_of_order"] == 0


def test_a_committed_transactions_writes_read_out_of_order_are_a_violation(tmp_path):
    # partition 1 got 0-1, 0-4, 0-7 in that order; the drain has them at offsets 2, 1, 0: one instance, its first step
    code, verdict, rows = checked(order_run(tmp_path, "swapped", swap={"0-1": 2, "0-7": 0}))
    # acked at those offsets too, so the producer's acks went backwards as well (nonmonotonic_send, per send)
    assert code == 1 and verdict["violations"] == {"txn_out_of_order": 1, "nonmonotonic_send": 2}
    row = rows[rows["kind"] == "txn_out_of_order"].iloc[0]
    assert row["partition"] == 1 and row["value"] == "0-4" and row["offset"] == 1 and row["producer"] == "p0"
    assert "wrote 0-1 before 0-4" in row["reason"] and "(2 such step(s)" in row["reason"]
    assert "transaction 0 of producer p0" in row["reason"]
    assert row["t_complete_ns"] == T + 10 * MS


def test_an_aborted_transaction_is_not_judged_for_order(tmp_path):
    txns = pd.DataFrame([txn(0, 0, 9, "aborted", 10)])
    final = pd.DataFrame({"partition": [1, 1], "offset": [0, 1], "value": ["0-7", "0-1"]})
    assert out_of_order(txns, final).empty


def test_each_value_is_placed_at_its_lowest_offset_and_incomplete_partitions_are_skipped():
    txns = pd.DataFrame([txn(0, 0, 9, "committed", 10)])
    # 0-4 also sits at offset 9 (a duplicate, reported as such): its first position keeps the order
    final = pd.DataFrame({"partition": [1, 1, 1, 1], "offset": [0, 1, 2, 9], "value": ["0-1", "0-4", "0-7", "0-4"]})
    assert out_of_order(txns, final).empty
    swapped = final.assign(offset=[2, 1, 0, 9])
    assert len(out_of_order(txns, swapped)) == 1
    assert out_of_order(txns, swapped, incomplete=(1,)).empty
