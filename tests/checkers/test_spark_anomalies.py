"""The Spark finder agrees with the pandas reference, row for row, on one run and on many runs in one job."""
import pandas as pd
import pytest

from kafka_chaos.checkers import instances
from kafka_chaos.checkers.availability import reference_buckets
from kafka_chaos.checkers.reference import count, find_anomalies
from kafka_chaos.checkers.spark import anomalies
from kafka_chaos.checkers.spark import buckets as spark_buckets
from kafka_chaos.checkers.spark import divergent as spark_divergent
from kafka_chaos.checkers.spark.anomalies import find_anomalies_spark
from kafka_chaos.history.synthetic import write_synthetic_run
from tests.checkers.conftest import MS, T, frames, read, send, write_run
from tests.checkers.test_anomaly_definitions import CASES

pytestmark = pytest.mark.spark


# A local check's per-value pass runs on the rows the driver picks position by position (checkers.narrow_files).
# Elsewhere (as on a cluster: ONE_TASK_ROWS 0 here) it runs on the unclean buckets' rows (narrowed) unless most
# buckets are unclean, or the history is too large for bucket sums: every path must give the reference's rows.
# Share 1.0 narrows every run, however small, picking the rows by a pushed-down predicate, or ("join") by a join as
# when there are many unclean ranges; 0.0 narrows only spotless ones; a row limit of 0 takes no bucket sums at all.
NARROWING = pytest.mark.parametrize("unclean_share", ["picked", 1.0, "join", 0.0, None],
                                    ids=["picked", "narrowed", "narrowed-by-join", "whole-history", "no-bucket-sums"])


def narrowing(monkeypatch, unclean_share):
    if unclean_share == "picked":
        return
    monkeypatch.setattr(anomalies, "ONE_TASK_ROWS", 0)
    if unclean_share is None:
        monkeypatch.setattr(spark_buckets, "MAX_ROWS", 0)
    elif unclean_share == "join":
        monkeypatch.setattr(spark_buckets, "MAX_UNCLEAN_SHARE", 1.0)
        monkeypatch.setattr(spark_buckets, "MAX_PUSHED_RANGES", 0)
    else:
        monkeypatch.setattr(spark_buckets, "MAX_UNCLEAN_SHARE", unclean_share)


@NARROWING
def test_every_hand_built_case_matches_the_reference_in_one_spark_job(spark, tmp_path, monkeypatch, unclean_share):
    narrowing(monkeypatch, unclean_share)
    runs = {}
    for i, (name, (sends, reads, _)) in enumerate(CASES.items()):
        runs[f"case{i}"] = write_run(tmp_path / f"case{i}", [dict(s) for s in sends], [dict(r) for r in reads])
    # one window that catches some acks=all sends of every case: min_isr_breach agrees too
    windows = {run_id: [(0, T - MS, T + 1 * MS)] for run_id in runs}
    findings = find_anomalies_spark(spark, runs, windows)
    for i, (name, (sends, reads, expected)) in enumerate(CASES.items()):
        found = findings.for_run(f"case{i}")
        s, r = frames([dict(x) for x in sends], [dict(x) for x in reads])
        pd.testing.assert_frame_equal(found.instances, find_anomalies(s, r, windows[f"case{i}"]), obj=name)
        assert found.counts == count(s, r)
        assert found.final_reads == {int(p): int(n) for p, n in
                                     r[r["phase"] == "final"]["partition"].value_counts().items()}


@NARROWING
@pytest.mark.parametrize("rows_per_partition", [2_000_000, 700], ids=["few-partitions", "many-partitions"])
def test_injected_synthetic_run_matches_the_reference(spark, tmp_path, monkeypatch, rows_per_partition,
                                                       unclean_share):
    narrowing(monkeypatch, unclean_share)
    # Many small shuffle partitions spread each value's sends and reads over tasks, as 100M sends do; and as there,
    # the windows are exchanged rather than run in one task (spark.queries.one_task).
    monkeypatch.setattr(anomalies, "ROWS_PER_SHUFFLE_PARTITION", rows_per_partition)
    if rows_per_partition < 2_000_000:
        monkeypatch.setattr(anomalies, "ONE_TASK_ROWS", 0)
    inject = {"lost": 2, "duplicate": 3, "phantom": 1, "divergent": 2, "failed_read": 1, "offset_mismatch": 2,
              "nonmonotonic_send": 3, "poll_skip": 2}
    run = write_synthetic_run(tmp_path / "inj", sends=3000, seed=4, consumers=2, inject=inject)
    found = find_anomalies_spark(spark, {"inj": run}).for_run("inj")
    got = found.instances
    from kafka_chaos.history.reader import read_table
    from kafka_chaos.history.schema import READS_SCHEMA, SENDS_SCHEMA
    s = read_table(run / "history/sends.parquet", SENDS_SCHEMA)
    r = read_table(run / "history/reads.parquet", READS_SCHEMA)
    pd.testing.assert_frame_equal(got, find_anomalies(s, r))
    assert {k: int((got["kind"] == k).sum()) for k in inject} == inject
    acks, pending = reference_buckets(s)
    for spark_side, pandas_side in ((found.ack_buckets, acks), (found.pending_buckets, pending)):
        order = ["partition", "first", "last"]
        pd.testing.assert_frame_equal(spark_side[order].sort_values(order).reset_index(drop=True),
                                      pandas_side[order].sort_values(order).reset_index(drop=True),
                                      check_dtype=False)


def test_an_empty_history_yields_no_instances(spark, tmp_path):
    run = write_run(tmp_path / "empty", [], [])
    found = find_anomalies_spark(spark, {"empty": run}).for_run("empty")
    got = found.instances
    assert len(got) == 0 and list(got.columns) == list(instances.INSTANCE_COLUMNS)
    assert found.counts.sends == 0 and len(found.ack_buckets) == 0 and found.final_reads == {}


# Positions where no read is stray: only two acked sends at one offset (or acks=0, which has no acked offset)
# can make them divergent, so the Spark pass must find these without a stray read pointing at them.
HIDDEN_DIVERGENCE = {
    "two values acked at one offset, both read there by the drain": (
        [send("a", offset=5), send("b", offset=5, t=1)],
        [read("a", offset=5), read("b", offset=5)]),
    "acks=0 values read at one offset": (
        [send("a", offset=-1, acks="0"), send("b", offset=-1, acks="0", t=1)],
        [read("a", offset=3), read("b", offset=3), read("a", offset=3, consumer="c0", t=900)]),
}


@NARROWING
@pytest.mark.parametrize("name", list(HIDDEN_DIVERGENCE))
def test_a_divergent_position_without_stray_reads_is_found(spark, tmp_path, monkeypatch, name, unclean_share):
    narrowing(monkeypatch, unclean_share)
    sends, reads = HIDDEN_DIVERGENCE[name]
    run = write_run(tmp_path / "run", [dict(s) for s in sends], [dict(r) for r in reads])
    got = find_anomalies_spark(spark, {"run": run}).for_run("run").instances
    s, r = frames([dict(x) for x in sends], [dict(x) for x in reads])
    expected = find_anomalies(s, r)
    assert (expected["kind"] == "divergent").sum() == 1
    pd.testing.assert_frame_equal(got, expected)


def test_too_many_candidate_positions_fall_back_to_grouping_every_read(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(spark_divergent, "MAX_CANDIDATE_POSITIONS", 0)
    inject = {"divergent": 3, "duplicate": 2, "lost": 1}
    run = write_synthetic_run(tmp_path / "inj", sends=2000, seed=7, consumers=2, inject=inject)
    got = find_anomalies_spark(spark, {"inj": run}).for_run("inj").instances
    from kafka_chaos.history.reader import read_table
    from kafka_chaos.history.schema import READS_SCHEMA, SENDS_SCHEMA
    s = read_table(run / "history/sends.parquet", SENDS_SCHEMA)
    r = read_table(run / "history/reads.parquet", READS_SCHEMA)
    pd.testing.assert_frame_equal(got, find_anomalies(s, r))
    assert int((got["kind"] == "divergent").sum()) == 3


def test_the_sends_summary_names_acks_and_outcomes_the_history_format_does_not_define(spark, tmp_path):
    """The summary groups by integer codes; a value outside the known names must still come back as itself."""
    sends = [send("a", offset=0), send("b", offset=1, acks="1"), send("c", offset=2, acks="-1"),
             send("d", outcome="lost-in-space", acks="0", offset=-1)]
    reads = [read("a", offset=0), read("b", offset=1), read("c", offset=2)]
    runs = {"odd": write_run(tmp_path / "odd", [dict(s) for s in sends], [dict(r) for r in reads]),
            "plain": write_run(tmp_path / "plain", [dict(s) for s in sends[:2]], [dict(r) for r in reads[:2]])}
    findings = find_anomalies_spark(spark, runs)
    assert findings.acks == {"odd": ("-1", "0", "1", "all"), "plain": ("1", "all")}
    for run_id, n in (("odd", 4), ("plain", 2)):
        s, r = frames([dict(x) for x in sends[:n]], [dict(x) for x in reads[:n - 1 if n == 4 else n]])
        assert findings.counts[run_id] == count(s, r)


@pytest.mark.parametrize("history", ["synthetic", "edge-rows"])
def test_the_spark_availability_job_gives_the_reference_islands(spark, tmp_path, history):
    """A local check takes the islands from numpy (checkers.availability_files); on a cluster, Spark's own job does:
    the same tables."""
    from kafka_chaos.checkers.availability import BUCKET_NS, NEVER
    from kafka_chaos.checkers.spark import queries as q
    from kafka_chaos.checkers.spark.collect import SEND_COLUMNS, load, to_pandas
    from kafka_chaos.history.reader import read_table
    from kafka_chaos.history.schema import SENDS_SCHEMA
    from tests.checkers.test_availability_files import EDGES

    run = write_synthetic_run(tmp_path / "run", sends=3000, seed=4, inject={"lost": 2, "failed_read": 1}) \
        if history == "synthetic" else write_run(tmp_path / "run", [dict(r) for r in EDGES], [])
    rows = to_pandas(q.availability_buckets(load(spark, {"run": run}, "sends.parquet", SEND_COLUMNS), BUCKET_NS, NEVER))
    reference = reference_buckets(read_table(run / "history" / "sends.parquet", SENDS_SCHEMA))
    order = ["partition", "first", "last"]
    for flag, expected in enumerate(reference):
        got = rows[rows["pending"] == flag][order].astype("int64").sort_values(order).reset_index(drop=True)
        pd.testing.assert_frame_equal(got, expected[order].astype("int64").sort_values(order).reset_index(drop=True))
        assert len(got)
