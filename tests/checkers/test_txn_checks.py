"""Transactions on synthetic histories: a committed transaction the final drain holds in part (txn_incomplete), an
aborted write a read_committed reader saw (failed_read), and the clean case."""
import json

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_chaos.harness.cli import main
from kafka_chaos.history.schema import TXNS_SCHEMA
from tests.checkers.conftest import MS, T, read, send, write_run


def txn(n, first, count, outcome, t_ms):
    return {"process": 0, "producer": "p0", "txn": n, "first_seq": first, "count": count, "outcome": outcome,
            "error": None, "t_ns": T + t_ms * MS}


def txn_run(tmp_path, name, final_skip=(), live_extra=()):
    """Transactions 0 (values 0-0..0-5, committed) and 1 (0-6..0-11, aborted) over 3 partitions."""
    sends, reads, offsets = [], [], [0, 0, 0]
    for seq in range(12):
        p, committed = seq % 3, seq < 6
        if committed:
            sends.append(send(f"0-{seq}", partition=p, offset=offsets[p], t=seq))
            if seq not in final_skip:
                reads.append(read(f"0-{seq}", partition=p, offset=offsets[p]))
            offsets[p] += 1
        else:
            row = send(f"0-{seq}", partition=p, outcome="fail", t=seq)
            row["error"] = "_TXN_ABORTED"
            sends.append(row)
    reads += [read(v, partition=p, offset=o, consumer="c0", t=500) for v, p, o in live_extra]
    run = write_run(tmp_path / name, sends, reads, consumer_mode="assign")
    pq.write_table(pa.Table.from_pylist([txn(0, 0, 6, "committed", 10), txn(1, 6, 6, "aborted", 20)],
                                        schema=TXNS_SCHEMA), run / "history/txns.parquet")
    return run


def checked(run):
    code = main(["check", str(run), "--engine", "pandas"])
    return code, json.loads((run / "verdict.json").read_text()), \
        pq.read_table(run / "anomalies.parquet").to_pandas()


def test_committed_whole_and_aborted_unseen_is_valid(tmp_path):
    code, verdict, _ = checked(txn_run(tmp_path, "clean"))
    assert code == 0 and verdict["valid"]
    assert verdict["anomalies"]["txn_incomplete"] == 0 and verdict["anomalies"]["lost"] == 0


def test_a_committed_transaction_missing_a_write_is_incomplete(tmp_path):
    code, verdict, rows = checked(txn_run(tmp_path, "partial", final_skip=(4,)))
    assert code == 1
    assert verdict["violations"] == {"lost": 1, "txn_incomplete": 1}
    row = rows[rows["kind"] == "txn_incomplete"].iloc[0]
    assert row["value"] == "0-4" and "lacks 1 of them" in row["reason"] and row["producer"] == "p0"


def test_an_aborted_write_read_by_a_read_committed_consumer_is_a_violation(tmp_path):
    code, verdict, rows = checked(txn_run(tmp_path, "aborted-read", live_extra=(("0-7", 1, 2),)))
    assert code == 1 and verdict["violations"].get("failed_read") == 1
    assert rows[rows["kind"] == "failed_read"].iloc[0]["value"] == "0-7"
