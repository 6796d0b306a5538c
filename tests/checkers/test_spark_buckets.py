"""Which rows the per-value pass reads: unclean buckets become offset ranges a Parquet reader can skip row groups by."""
import pandas as pd
import pytest

from kafka_chaos.checkers.spark.buckets import BUCKET, FINAL, SEND, acked_at, offset_ranges


def buckets(*rows):
    return pd.DataFrame(rows, columns=["run", "partition", "bucket"])


def test_adjacent_buckets_of_one_partition_become_one_range():
    assert offset_ranges(buckets((0, 3, 11), (0, 3, 10), (0, 3, 12))) == [(0, 3, 10 * BUCKET, 13 * BUCKET - 1)]


def test_a_gap_another_partition_or_another_run_starts_a_new_range():
    got = offset_ranges(buckets((0, 3, 10), (0, 3, 12), (0, 4, 13), (1, 3, 13)))
    assert got == [(0, 3, 10 * BUCKET, 11 * BUCKET - 1), (0, 3, 12 * BUCKET, 13 * BUCKET - 1),
                   (0, 4, 13 * BUCKET, 14 * BUCKET - 1), (1, 3, 13 * BUCKET, 14 * BUCKET - 1)]


def test_a_bucket_listed_twice_is_one_range_and_none_give_none():
    assert offset_ranges(buckets((2, 0, 0), (2, 0, 0))) == [(2, 0, 0, BUCKET - 1)]
    assert offset_ranges(buckets()) == []


def test_acked_positions_are_read_off_the_masks_of_every_producer_setting_in_the_bucket():
    """Two summary codes in one bucket are two rows whose masks OR together; bit 63 (the int64's sign) counts; a
    read's row, another partition or run, or a bucket without sends says no."""
    def mask(*offsets):
        return sum(1 << (o % BUCKET) for o in offsets) - (1 << 64 if any(o % BUCKET == 63 for o in offsets) else 0)
    sums = pd.DataFrame([(0, 1, 2, SEND, 5, mask(128, 191)), (0, 1, 2, SEND, 8, mask(130)),
                         (0, 1, 2, FINAL, 0, mask(129)), (1, 1, 2, SEND, 5, mask(129))],
                        columns=["run", "partition", "bucket", "kind", "code", "mask"])
    at = pd.DataFrame([(0, 1, 128), (0, 1, 191), (0, 1, 130), (0, 1, 129), (0, 0, 128), (1, 1, 129), (0, 1, 5)],
                      columns=["run", "partition", "offset"])
    assert acked_at(sums, at).tolist() == [True, True, True, False, False, True, False]


@pytest.mark.spark
def test_a_packed_position_unpacks_exactly_at_every_partition_and_offset(spark):
    """pos orders as (partition, offset) and unpacks exactly, the -1 'no partition' and offsets near 2^40 too
    (a division through a double rounded partition 8192's last offsets into the next partition)."""
    from pyspark.sql import functions as F

    from kafka_chaos.checkers.spark.queries import offset_of, partition_of, pos

    rows = [(p, o) for p in (-1, 0, 1, 8191, 8192, 2**23 - 1) for o in (0, 1, 2**35 + 1, 2**40 - 1)]
    packed = spark.createDataFrame(rows, "p int, o long").select("p", "o", pos(F.col("p"), F.col("o")).alias("x"))
    out = packed.select("p", "o", "x", partition_of(F.col("x")).alias("p2"), offset_of(F.col("x")).alias("o2")) \
        .toPandas()
    assert list(zip(out["p2"], out["o2"])) == rows
    assert list(out.sort_values("x")[["p", "o"]].itertuples(index=False, name=None)) == sorted(rows)


def _exchanges(df) -> list[str]:
    """The exchanges of the plan adaptive execution ran (run the query first), top down."""
    plan = df._jdf.queryExecution().executedPlan().toString().split("== Initial Plan ==")[0]
    return [line.strip() for line in plan.splitlines() if "Exchange " in line]


@pytest.mark.spark
@pytest.mark.parametrize("runs", [1, 2])
def test_the_availability_islands_window_runs_in_the_stage_of_its_repartition(spark, tmp_path, runs):
    """Two exchanges: the bucket aggregation's and the islands' fixed repartition, whose tasks the window runs in.
    With one run `run` is a constant the window's keys drop; a repartition still keyed on it planned a third
    exchange, which adaptive execution coalesced into one task that ran alone at the end of the 10M check."""
    from kafka_chaos.checkers.availability import BUCKET_NS, NEVER
    from kafka_chaos.checkers.spark import queries as q
    from kafka_chaos.checkers.spark.collect import SEND_COLUMNS, load

    from .conftest import send, write_run

    dirs = {f"r{i}": write_run(tmp_path / f"r{i}", [send(f"v{k}", partition=k % 3, offset=k // 3, t=k)
                                                      for k in range(30)], []) for i in range(runs)}
    found = q.availability_buckets(load(spark, dirs, "sends.parquet", SEND_COLUMNS), BUCKET_NS, NEVER)
    assert len(found.toPandas()) == 3 * 2 * runs            # per run and partition: one ack and one pending island
    exchanges = _exchanges(found)
    assert len(exchanges) == 2, exchanges
    assert f"{q.ISLAND_TASKS}), REPARTITION_BY_NUM" in exchanges[0]


@pytest.mark.spark
@pytest.mark.parametrize("gather", [True, False], ids=["one-task", "exchanged"])
def test_gathered_windows_plan_no_exchange_and_find_the_same_rows(spark, tmp_path, gather):
    """In one task (spark.queries.one_task) the nonmonotonic-sends and poll-gap windows need no exchange; exchanged,
    each window has its own. The rows are the same."""
    from kafka_chaos.checkers.spark import queries as q
    from kafka_chaos.checkers.spark.collect import READ_COLUMNS, SEND_COLUMNS, load

    from .conftest import read, send, write_run

    sends = [send(f"v{k}", partition=k % 3, offset=k // 3 - 2 * (k == 13), t=k) for k in range(30)]   # v13 lower
    reads = [read(f"v{k}", partition=k % 3, offset=k // 3 + (k == 20), consumer="c1", seq=k)   # v20 one higher
             for k in range(30)]
    dirs = {f"r{i}": write_run(tmp_path / f"r{i}", sends, reads) for i in range(2)}
    s, r = load(spark, dirs, "sends.parquet", SEND_COLUMNS), load(spark, dirs, "reads.parquet", READ_COLUMNS)
    mono, gaps = q.nonmonotonic_sends(s, gather), q.poll_gaps(r, gather)
    assert sorted(mono.toPandas()["op_id"]) == [13, 13]                 # in both runs
    assert sorted(gaps.toPandas()[["partition", "offset", "from_offset"]].itertuples(index=False)) == \
        [(2, 7, 5), (2, 7, 5)]
    assert [len(_exchanges(df)) for df in (mono, gaps)] == ([0, 0] if gather else [1, 1])


@pytest.mark.spark
@pytest.mark.parametrize("gather", [True, False], ids=["one-task", "exchanged"])
def test_a_gathered_pass_runs_without_adaptive_execution_and_gives_the_session_back_as_it_was(
        spark, tmp_path, monkeypatch, gather):
    """anomalies.ONE_TASK_CONF: a local pass up to ONE_TASK_ROWS plans its jobs without adaptive execution; a larger
    one keeps it; either way the (warm, shared) session's setting is what it was before."""
    from kafka_chaos.checkers.spark import anomalies

    from .conftest import read, send, write_run

    if not gather:
        monkeypatch.setattr(anomalies, "ONE_TASK_ROWS", 0)
    seen = []
    collect = anomalies.to_pandas

    def recording(df, *args):
        seen.append(df.sparkSession.conf.get("spark.sql.adaptive.enabled"))
        return collect(df, *args)

    monkeypatch.setattr(anomalies, "to_pandas", recording)
    run = write_run(tmp_path / "r", [send(f"v{k}", partition=0, offset=k, t=k) for k in range(10)],
                    [read(f"v{k}", partition=0, offset=k, consumer="c1", seq=k) for k in range(10)])
    before = spark.conf.get("spark.sql.adaptive.enabled")
    found = anomalies.find_anomalies_spark(spark, {"r": run})
    assert found.counts["r"].sends == 10
    assert seen and set(seen) == ({"false"} if gather else {before})
    assert spark.conf.get("spark.sql.adaptive.enabled") == before == "true"


@pytest.mark.spark
@pytest.mark.parametrize("gather", [True, False], ids=["local", "as-on-a-cluster"])
def test_a_gathered_pass_takes_the_drivers_counts_and_pick_and_no_bucket_sums_of_sparks(spark, tmp_path, monkeypatch,
                                                                                       gather):
    """Locally the driver counts the buckets (bucket_files) and picks the per-value pass's rows (narrow_files):
    Spark's bucket sums, 12-15 CPU-s on 10M sends, are not run; elsewhere they are, and the driver reads nothing."""
    from kafka_chaos.checkers import narrow_files
    from kafka_chaos.checkers.spark import anomalies

    from .conftest import read, send, write_run

    labels, picks = [], []
    collect, pick = anomalies.to_pandas, narrow_files.runs_narrowed
    monkeypatch.setattr(anomalies, "to_pandas", lambda df, label=None, pool=None: labels.append(label) or
                        collect(df, label, pool))
    monkeypatch.setattr(narrow_files, "runs_narrowed", lambda *a: picks.append(pick(*a)) or picks[-1])
    if not gather:
        monkeypatch.setattr(anomalies, "ONE_TASK_ROWS", 0)
    run = write_run(tmp_path / "r", [send(f"v{k}", partition=0, offset=k, t=k) for k in range(10)],
                    [read(f"v{k}", partition=0, offset=k + k // 5, consumer="c1", seq=k) for k in range(10)])
    found = anomalies.find_anomalies_spark(spark, {"r": run})
    assert ("bucket sums" in labels) is not gather and len(picks) == int(gather)
    assert found.counts["r"].sends == 10


@pytest.mark.spark
def test_a_bucket_of_two_producer_settings_is_judged_as_one_and_the_sums_count_every_send(spark, tmp_path):
    """The bucket sums also carry the sends summary, so a bucket's acked sends come in one row per producer setting
    (acks, idempotence). Their masks are OR-ed before the offsets are counted: two settings acked at two offsets
    leave the bucket clean, at one offset crowded."""
    from kafka_chaos.checkers.spark import buckets as b
    from kafka_chaos.checkers.spark import queries as q
    from kafka_chaos.checkers.spark.collect import READ_COLUMNS, SEND_COLUMNS, load, to_pandas

    from .conftest import read, send, write_run

    sends = [send("a", offset=0), send("b", offset=1, acks="1", idempotent=False),
             send("c", offset=2), send("d", offset=2, acks="1"),                  # bucket 0: offset 2 acked twice
             send("e", offset=BUCKET), send("f", offset=BUCKET + 1, acks="1"),     # bucket 1: two settings, clean
             send("g", acks="0", offset=-1), send("h", outcome="fail")] + \
        [send(f"full{o}", offset=o) for o in range(2 * BUCKET, 3 * BUCKET)]   # bucket 2: every bit of its mask
    reads = [read(v, offset=o) for v, o in (("a", 0), ("b", 1), ("c", 2), ("e", BUCKET), ("f", BUCKET + 1))] + \
        [read(f"full{o}", offset=o) for o in range(2 * BUCKET, 3 * BUCKET)]
    run = {"r": write_run(tmp_path / "r", sends, reads)}
    sums = to_pandas(b.bucket_sums(load(spark, run, "sends.parquet", SEND_COLUMNS),
                                   load(spark, run, "reads.parquet", READ_COLUMNS)))
    unclean, crowded, total = b.judge_buckets(sums)
    assert total == 3
    assert crowded[b.KEYS].values.tolist() == [[0, 0, 0]] and unclean[b.KEYS].values.tolist() == [[0, 0, 0]]
    summary = b.sends_summary(sums).sort_values(["outcome", "acks", "idempotent"]).reset_index(drop=True)
    named = [(q.OUTCOMES[o], q.ACKS[a], i, n) for o, a, i, n in
             zip(summary["outcome"], summary["acks"], summary["idempotent"], summary["count"])]
    assert named == [("ok", "0", True, 1), ("ok", "1", False, 1), ("ok", "1", True, 2), ("ok", "all", True, 3 + BUCKET),
                     ("fail", "all", True, 1)]
