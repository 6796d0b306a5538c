"""The driver's windows (checkers.series_files) find exactly the rows Spark's queries find, in file order or not."""
from __future__ import annotations

import random

import pytest

from kafka_chaos.checkers import series_files
from kafka_chaos.checkers.spark import queries as q
from kafka_chaos.checkers.spark.collect import READ_COLUMNS, SEND_COLUMNS, load, to_pandas

from .conftest import read, send, write_run


def spark_nonmonotonic(spark, run) -> set[tuple[int, int, int]]:
    rows = to_pandas(q.nonmonotonic_sends(load(spark, {"r": run}, "sends.parquet", SEND_COLUMNS)))
    return {(int(a), int(b), int(c)) for a, b, c in zip(rows["op_id"], rows["partition"], rows["offset"])}


def numpy_nonmonotonic(run) -> set[tuple[int, int, int]]:
    rows = series_files.runs_nonmonotonic_sends({"r": run})
    assert set(rows["run"]) <= {0}
    return {(int(a), int(b), int(c)) for a, b, c in zip(rows["op_id"], rows["partition"], rows["offset"])}


def spark_gaps(spark, run) -> set[tuple[int, int, int, int]]:
    rows = to_pandas(q.poll_gaps(load(spark, {"r": run}, "reads.parquet", READ_COLUMNS)))
    return {tuple(int(x) for x in r) for r in rows[["seq", "partition", "offset", "from_offset"]].itertuples(False)}


def numpy_gaps(run) -> set[tuple[int, int, int, int]]:
    rows = series_files.runs_poll_gaps({"r": run})
    return {tuple(int(x) for x in r) for r in rows[["seq", "partition", "offset", "from_offset"]].itertuples(False)}


@pytest.mark.spark
def test_a_send_acked_below_its_series_predecessor_is_nonmonotonic_and_another_producers_is_not(spark, tmp_path):
    sends = [send("a", offset=5, t=1), send("b", offset=3, t=2),                 # b: below a, same series
             send("c", offset=1, producer="p1", t=3),                            # another producer's: its own series
             send("d", offset=None, outcome="info", t=4), send("e", offset=6, t=5),
             send("f", partition=1, offset=0, t=6), send("g", partition=None, offset=9, t=7),
             send("h", partition=None, offset=8, t=8)]                           # no partition: partition -1
    run = write_run(tmp_path / "r", sends, [])
    assert numpy_nonmonotonic(run) == spark_nonmonotonic(spark, run) == {(1, 0, 3), (7, -1, 8)}


@pytest.mark.spark
def test_sends_out_of_invoke_order_in_the_file_are_put_in_order_first(spark, tmp_path):
    """Invoke order, not file order, defines the predecessor; equal invoke times are ordered by op id."""
    sends = [send("late", offset=1, t=9, op_id=0), send("early", offset=4, t=1, op_id=1),
             send("tie-second", offset=2, t=5, op_id=3), send("tie-first", offset=7, t=5, op_id=2)]
    run = write_run(tmp_path / "r", sends, [])
    assert numpy_nonmonotonic(run) == spark_nonmonotonic(spark, run) == {(3, 0, 2), (0, 0, 1)}


@pytest.mark.spark
def test_a_live_consumer_jumping_offsets_is_a_gap_and_the_final_drain_never_is(spark, tmp_path):
    reads = [read("a", offset=0, consumer="c1", seq=0), read("b", offset=3, consumer="c1", seq=1),
             read("c", partition=1, offset=0, consumer="c1", seq=2), read("d", partition=1, offset=1, consumer="c1",
                                                                           seq=3),
             read("e", offset=0, consumer="c2", seq=0), read("f", offset=1, consumer="c2", seq=1),
             read("a", offset=0), read("b", offset=5)]                           # the drain: never a gap
    run = write_run(tmp_path / "r", [], reads)
    assert numpy_gaps(run) == spark_gaps(spark, run) == {(1, 0, 3, 0)}


@pytest.mark.spark
def test_reads_out_of_seq_order_in_the_file_are_put_in_order_first(spark, tmp_path):
    reads = [read("c", offset=9, consumer="c1", seq=2), read("a", offset=0, consumer="c1", seq=0),
             read("b", offset=1, consumer="c1", seq=1)]
    run = write_run(tmp_path / "r", [], reads)
    assert numpy_gaps(run) == spark_gaps(spark, run) == {(2, 0, 9, 1)}


@pytest.mark.spark
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_histories_give_spark_and_numpy_the_same_rows(spark, tmp_path, seed):
    """Producers, processes, partitions and consumers interleaved, offsets partly out of order, rows shuffled or
    not: both ways find the same sends and gaps (and some of each)."""
    rng = random.Random(seed)
    sends, reads, next_offset = [], [], {}
    for i in range(3000):
        p = rng.randrange(4)
        off = next_offset.get(p, 0) + rng.choice((1, 1, 1, 2))
        next_offset[p] = off
        off = off - rng.randrange(1, 5) if rng.random() < 0.02 else off
        outcome = rng.choice(("ok",) * 8 + ("info", "fail"))
        sends.append(send(f"v{i}", partition=p if rng.random() > 0.01 else None,
                          offset=off if outcome == "ok" else None, outcome=outcome, producer=f"p{rng.randrange(3)}",
                          process=rng.randrange(2), t=rng.randrange(2000), op_id=i))
    seqs: dict[str, int] = {}
    for i in range(3000):
        consumer, p = f"c{rng.randrange(3)}", rng.randrange(4)
        seqs[consumer] = seqs.get(consumer, 0) + 1
        reads.append(read(f"v{i}", partition=p, offset=i // 4 + rng.choice((0, 0, 0, 2)), consumer=consumer,
                          seq=seqs[consumer]))
    if seed != 1:
        rng.shuffle(sends)
        rng.shuffle(reads)
    run = write_run(tmp_path / "r", sends, reads)
    nonmono, gaps = numpy_nonmonotonic(run), numpy_gaps(run)
    assert nonmono == spark_nonmonotonic(spark, run) and len(nonmono) > 10
    assert gaps == spark_gaps(spark, run) and len(gaps) > 10
