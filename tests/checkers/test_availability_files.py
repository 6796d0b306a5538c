"""The local check's availability islands, read straight from the sends file in numpy, are the pandas reference's."""
import numpy as np
import pandas as pd
import pytest

from kafka_chaos.checkers.availability import reference_buckets
from kafka_chaos.checkers.availability_files import bucket_extremes, file_islands, runs_islands
from kafka_chaos.history.synthetic import write_synthetic_run
from tests.checkers.conftest import MS, T, send, write_run


def sent(value, t_ms, done_ms, partition=0, outcome="ok", acks="1"):
    row = send(value, partition=partition, offset=0, outcome=outcome, acks=acks, t=t_ms)
    row["t_complete_ns"] = None if done_ms is None else T + done_ms * MS
    return row


def both(run_dir, batch_rows):
    from kafka_chaos.history.reader import read_table
    from kafka_chaos.history.schema import SENDS_SCHEMA
    mine = file_islands(run_dir / "history" / "sends.parquet", batch_rows)
    reference = reference_buckets(read_table(run_dir / "history" / "sends.parquet", SENDS_SCHEMA))
    return mine, tuple(r.reset_index(drop=True).astype("int64") for r in reference)


# Every row kind the tables distinguish: acks=0 and partition-less sends left out, failed and never-completed sends
# pending (the latter until the end), an `ok` send without a completion time not an ack, gaps on either side of
# the 100 ms merge distance, and a partition with sends but no acks at all.
EDGES = [sent("a", 0, 5), sent("b", 30, 60), sent("c", 250, 251), sent("d", 260, None, outcome="info"),
         sent("e", 400, 9_000, outcome="fail"), sent("z", 500, 501, acks="0"), sent("n", 600, 601),
         sent("p", 700, 705, partition=3), sent("q", 2_000, None, partition=3), sent("r", 800, None, outcome="ok"),
         sent("s", 5_000, 5_100, partition=7, outcome="fail"), sent("w", 5_150, 5_160, acks="all", partition=1)]
EDGES[6]["partition"] = None


@pytest.mark.parametrize("batch_rows", [1, 3, 1000], ids=["row-batches", "straddling-batches", "one-batch"])
def test_edge_rows_give_the_reference_tables_in_any_batch_size(tmp_path, batch_rows):
    run = write_run(tmp_path / "run", [dict(r) for r in EDGES], [])
    (acks, pending), (ref_acks, ref_pending) = both(run, batch_rows)
    pd.testing.assert_frame_equal(acks, ref_acks)
    pd.testing.assert_frame_equal(pending, ref_pending)
    assert 7 not in set(acks["partition"]) and 7 in set(pending["partition"])      # failed only: waits, no acks
    assert pending["last"].max() == np.iinfo(np.int64).max                          # never completed


@pytest.mark.parametrize("seed", [1, 2])
def test_a_synthetic_history_gives_the_reference_tables(tmp_path, seed):
    run = write_synthetic_run(tmp_path / "run", sends=20_000, seed=seed, inject={"lost": 3, "failed_read": 2})
    (acks, pending), (ref_acks, ref_pending) = both(run, 4096)
    pd.testing.assert_frame_equal(acks, ref_acks)
    pd.testing.assert_frame_equal(pending, ref_pending)
    assert len(acks) and len(pending)


def test_sparse_buckets_take_the_sorting_path_and_agree_with_the_dense_one():
    """Cells are (partition x bucket); where most are empty (far-apart partitions and times) a sort replaces the
    dense table: both give the same rows, in (partition, bucket) order."""
    rng = np.random.default_rng(7)
    p = rng.choice([0, 5, 900], 5000)
    b = rng.choice([0, 3, 10_000_000], 5000)
    first = b * 100 + rng.integers(0, 100, 5000)
    last = first + rng.integers(0, 1000, 5000)
    sparse = bucket_extremes(p, b, first, last)                               # 901 x 10M cells: sorted
    p_rank, b_rank = np.searchsorted([0, 5, 900], p), np.searchsorted([0, 3, 10_000_000], b)
    dense = bucket_extremes(p_rank, b_rank, first, last)                        # 3 x 3 cells: a dense table
    expected = pd.DataFrame({"p": p, "b": b, "f": first, "l": last}).groupby(["p", "b"], as_index=False) \
        .agg(f=("f", "min"), l=("l", "max"))
    pd.testing.assert_frame_equal(pd.DataFrame(dict(zip("pbfl", sparse))), expected, check_dtype=False)
    assert [x.tolist() for x in dense[2:]] == [x.tolist() for x in sparse[2:]]
    assert np.array_equal(np.array([0, 5, 900])[dense[0]], sparse[0])


def test_runs_are_numbered_in_order_with_a_pending_flag(tmp_path):
    runs = {name: write_run(tmp_path / name, [sent("a", 0, 5, partition=i)], []) for i, name in enumerate("xy")}
    rows = runs_islands(runs)
    assert list(rows.columns) == ["run", "partition", "pending", "first", "last"]
    assert rows[["run", "partition", "pending"]].values.tolist() == [[0, 0, 0], [0, 0, 1], [1, 1, 0], [1, 1, 1]]


def test_a_history_without_acked_sends_has_no_islands(tmp_path):
    run = write_run(tmp_path / "run", [sent("z", 0, 1, acks="0")], [])
    acks, pending = file_islands(run / "history" / "sends.parquet")
    assert len(acks) == len(pending) == 0 and list(acks.columns) == ["partition", "first", "last"]
