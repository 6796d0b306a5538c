"""The anomaly definitions on Spark, over one run or many at once: run the queries, assemble the instance rows.

The histories never come back to the driver. What does: per-run summaries (a few rows), availability islands,
the candidate values of the per-value kinds, the send columns of those candidates, and the (usually empty)
divergent positions, min.insync breaches and consumer gaps. Instance rows are then put together in pandas, in the
shape of checkers.instances, so they compare row for row with the pandas reference. The exceptions, local checks
only, where the driver reads the same files and is cheaper than Spark's jobs: it reduces the sends to the
availability islands (checkers.availability_files), finds the nonmonotonic sends and poll gaps
(checkers.series_files), picks the per-value pass's rows position by position (checkers.narrow_files) and
aggregates them per value (checkers.summary_files: Spark's pass applies the kinds' predicates to that summary, and
the ambiguous values' exact pass runs beside it), finds the divergent positions among the picked reads
(checkers.divergent_files), and looks up many candidates' sends (checkers.lookup_files) itself.
"""
from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from kafka_chaos.checkers import (
    availability_files,
    exact_files,
    instances,
    lookup_files,
    narrow_files,
    series_files,
    summary_files,
)
from kafka_chaos.checkers.availability import BUCKET_NS, NEVER
from kafka_chaos.checkers.findings import Findings
from kafka_chaos.checkers.spark import buckets, divergent, hub
from kafka_chaos.checkers.spark import queries as q
from kafka_chaos.checkers.spark.collect import (
    CRITICAL,
    READ_COLUMNS,
    SEND_COLUMNS,
    instance_rows,
    load,
    row_count,
    shuffle_partitions,
    sql_conf,
    to_pandas,
)

ROWS_PER_SHUFFLE_PARTITION = 2_000_000     # ~100-200 MB of shuffled rows per task in the value exchange
ONE_TASK_ROWS = 40_000_000   # sends + reads up to which a local check runs its windows in one task each (q.one_task)
# ...and without adaptive execution. Its exchanges are then the bucket sums' and the per-value pass's, sized by this
# module, and the islands' (ISLAND_TASKS): nothing for it to coalesce, while it cuts every query into one job per
# stage, each re-optimised, and a cold JVM pays for each. 10M file, anomaly pass alternating (bench/spark_profile.py,
# 2026-11-26 22:47-22:52): 20.1, 20.4, 21.4, 21.2, 21.3 s against 23.1, 23.1, 22.8, 23.0, 21.6 s with it.
ONE_TASK_CONF = {"spark.sql.adaptive.enabled": "false"}
PER_VALUE_KINDS = ("lost", "failed_read", "recovered", "offset_mismatch", "nonmonotonic_send")
PER_POSITION_KINDS = ("duplicate", "phantom")     # rows at the value's first read position
SEND_FIELDS = ["producer", "process", "op_id", "acks", "idempotent", "t_invoke_ns", "t_complete_ns"]

__all__ = ["Findings", "find_anomalies_spark"]
log = logging.getLogger(__name__)


def find_anomalies_spark(spark: SparkSession, runs: dict[str, Path],
                         breach_windows: dict[str, list[tuple[int, int, int]]] | Future | None = None,
                         sources: dict[str, str] | None = None, when_done=None) -> Findings:
    """Every anomaly instance of every run in `runs` ({run_id: results dir}) in one Spark session.

    sources: {run_id: URL} for runs whose history Spark's jobs read from there rather than from the results dir
    (s3a://bucket/prefix/run_id: the executors need no disk of the driver's); the driver's own small reads (file
    footers, the local availability pass) use the results dir, a copy of the same files.

    breach_windows: per run, (partition, start_ns, end_ns) windows in which the ISR model is certain the ISR was
    below min.insync.replicas; acks=all writes acked wholly inside one are `min_isr_breach` instances. May be a
    Future of them (the model still running): only that job waits for it.

    when_done: called once the last Spark job is back, before the instance rows are put together (checkers.check
    ends a one-shot check's JVM there, so that the largest pandas frames do not sit beside its heap).
    """
    run_ids = list(runs)
    read_from = {run_id: (sources or {}).get(run_id, run_dir) for run_id, run_dir in runs.items()}
    sends = load(spark, read_from, "sends.parquet", SEND_COLUMNS)
    reads = load(spark, read_from, "reads.parquet", READ_COLUMNS)
    rows = row_count(runs, "sends.parquet") + row_count(runs, "reads.parquet")

    # Independent queries run concurrently. The longest chain (bucket sums and nonmonotonic sends, then the
    # per-value pass on the unclean buckets and its follow-ups) runs in the fair scheduler's "critical" pool, so the
    # other jobs fill the cores around it instead of queueing ahead of its later stages.
    narrow = rows <= buckets.MAX_ROWS     # else the bucket table itself is too large to bring to the driver
    local = spark.sparkContext.master.startswith("local")       # the driver reads the files the executors read
    gather = rows <= ONE_TASK_ROWS and local                    # queries.one_task
    with sql_conf(spark, ONE_TASK_CONF if gather else {}), ThreadPoolExecutor(max_workers=8) as pool, \
            narrow_files.scratch() as scratch:
        if gather:
            # The driver reads the files itself: it picks the per-value pass's rows position by position
            # (narrow_files: ~4 CPU-s of numpy on 10M sends, where Spark's bucket sums took 12-15 and narrowed only
            # to whole buckets, none of them on an anomaly-dense history), counts the buckets for the summaries and
            # the crowded offsets from the same read (bucket_files) and finds the nonmonotonic sends (series_files:
            # ~2 CPU-s for Spark's ~9).
            nonmono = pool.submit(series_files.runs_nonmonotonic_sends, runs)
            picked = pool.submit(narrow_files.runs_narrowed, runs, {narrow_files.SENDS: SEND_COLUMNS,
                                 narrow_files.READS: READ_COLUMNS}, nonmono, Path(scratch))
            sums = pool.submit(lambda: picked.result().counts)
            # the nonmonotonic sends' marks as Spark's table once they are known, before the pick ends: both passes'
            marks = pool.submit(lambda: _marks(spark, nonmono.result()))
            exact = pool.submit(_ambiguous_exact, spark, picked, marks)
        else:
            picked = marks = None
            sums = pool.submit(to_pandas, buckets.bucket_sums(sends, reads), "bucket sums", CRITICAL) \
                if narrow else None
            nonmono = pool.submit(to_pandas, q.nonmonotonic_sends(sends, gather), "nonmonotonic sends", CRITICAL)
        send_summary = None if sums is not None else pool.submit(_sends_summary, q.one_task(sends, gather))
        read_summary = None if sums is not None else pool.submit(to_pandas, q.reads_summary(reads), "reads summary")
        poll_skips = pool.submit(_poll_skip_rows, spark, reads, gather, runs)
        # a reduction to a row per 100 ms bucket: locally numpy does it with a fraction of the CPU (availability_files)
        # Last of the first batch: numpy's pass holds the GIL for long stretches, and submitted first it kept
        # the threads above from planning theirs, so Spark's first task started at ~4.5 s of a 10M check, not ~2.3 s
        avail = pool.submit(availability_files.runs_islands, runs) if local else \
            pool.submit(to_pandas, q.availability_buckets(sends, BUCKET_NS, NEVER), "availability buckets")
        breaches = pool.submit(_breaching, spark, sends, run_ids, breach_windows)
        send_summary = _named_summary(sends, buckets.sends_summary(sums.result())) if sums is not None else \
            send_summary.result()
        unplaced = divergent.runs_without_positions(send_summary)
        found, doubles, (s_src, r_src) = _per_value(spark, sends, reads, sums.result() if sums is not None else None,
                                                    nonmono.result(), unplaced, rows,
                                                    picked.result() if picked is not None else None,
                                                    marks.result() if marks is not None else None)
        amb = divergent.split_ambiguous(found)
        pick = picked.result() if gather else None
        try:
            # a gathered check's driver looks up many candidates' sends itself (lookup_files), in the picked copies,
            # which hold every candidate's send (narrow_files)
            sent = pool.submit(_send_details, spark, s_src, found, pick.dirs if pick is not None else None)
            sent_rows = pool.submit(lambda: _with_breached(spark, sends, sent.result(), breaches.result()))
            if pick is not None and pick.divergent is not None:
                # The divergent positions were found in the pick, the ambiguous values are decided beside the
                # per-value pass, and the instance rows of the values the pass decided are put together while that
                # exact pass ends (a gathered history's: at most a few million rows beside the JVM's heap).
                decided = divergent.with_exact(found, None)
                early = pool.submit(lambda rows=decided: _per_value_rows(rows, sent_rows.result()))
                if exact.result() is None and len(amb):
                    raise AssertionError("the per-value pass found ambiguous values the driver's summary did not")
                per_value = exact.result()
                diverged = pool.submit(instance_rows, [pick.divergent.assign(kind="divergent")])
            else:
                early = None
                per_value, diverged = _looked_up(spark, pool, found, amb, doubles, unplaced, sums, r_src, reads)
            found = amb = decided = None      # per_value holds the rows from here: not both beside the last jobs
            breached, details = breaches.result(), sent_rows.result()
            found = [diverged.result(), poll_skips.result()]
        finally:
            for frame in (s_src, r_src):
                frame.unpersist()
        read_summary = buckets.reads_summary(sums.result()) if sums is not None else read_summary.result()
        avail = avail.result()
        ack_b, pending_b = (avail[avail["pending"] == flag].drop(columns="pending") for flag in (0, 1))
        if when_done is not None:       # every Spark job is back: the early rows, if any, are still being built
            when_done()
    # after when_done: on 100M anomaly-dense sends these rows are the driver's largest frames (7M instances)
    found = [_per_value_rows(per_value, details) if per_value is not None else pd.DataFrame(),
             _breach_rows(breached, details), *found, *([early.result()] if early is not None else [])]
    found = pd.concat([f for f in found if len(f)], ignore_index=True) if any(len(f) for f in found) else \
        instances.empty().assign(run=pd.Series(dtype="int64"))
    found = found.assign(run_id=np.asarray(run_ids, dtype=object)[found["run"].to_numpy(dtype=np.int64)]) \
        .drop(columns="run")
    counts, acks, idempotent, final_reads = buckets.run_summaries(run_ids, send_summary, read_summary)
    return Findings(instances=found, counts=counts, ack_buckets=_with_run_id(ack_b, run_ids),
                    pending_buckets=_with_run_id(pending_b, run_ids), final_reads=final_reads, acks=acks,
                    idempotent=idempotent)


def _per_value(spark: SparkSession, sends: DataFrame, reads: DataFrame, sums: pd.DataFrame | None,
               nonmono: pd.DataFrame, unplaced: set[int], rows: int,
               picked: narrow_files.Picked | None = None, marks: DataFrame | None = None):
    """The per-value pass's rows (hub.candidates_fast); the positions acked twice; the sends and reads the pass ran
    on: the rows the driver `picked` (checkers.narrow_files; `sums` are then its bucket counts, checkers.bucket_files),
    those of the unclean buckets (checkers.spark.buckets, persisted), or the whole history when there are no bucket
    sums or most buckets are unclean."""
    narrowed = False
    if sums is not None and picked is None:      # the pick holds the rows and found the divergent positions
        unclean, crowded, total = buckets.judge_buckets(sums)
        unclean = pd.concat([unclean, buckets.nonmonotonic_buckets(nonmono)], ignore_index=True).drop_duplicates()
        narrowed = buckets.narrows(sums, unclean, total, unplaced)
    if narrowed:
        s_src, r_src = buckets.in_unclean(spark, sends, reads, unclean, unplaced)
        s_src, r_src = s_src.persist(), r_src.persist()
        if not unplaced:          # else every row of those runs too: keep the whole history's count
            rows = int(sums.merge(unclean, on=buckets.KEYS)["n"].sum())
    elif picked is not None:      # whole values and whole positions: no second pass for values read but not sent
        s_src, r_src = (load(spark, picked.dirs, name, columns)
                        for name, columns in ((narrow_files.SENDS, SEND_COLUMNS), (narrow_files.READS, READ_COLUMNS)))
        rows = picked.rows
    else:
        s_src, r_src = sends, reads
    mono = marks if marks is not None else _marks(spark, nonmono)

    def pass_over(s: DataFrame, r: DataFrame) -> pd.DataFrame:
        if picked is not None and picked.summaries is not None:     # the driver aggregated the rows it picked
            summary = load(spark, picked.summaries, summary_files.NAME, summary_files.FILE_SCHEMA)
            slim = picked.held is not None          # ... and holds the summaries: only the flags come back
            found = to_pandas(hub.candidates_of_summary(summary, mono, slim), "per-value pass", CRITICAL)
            return picked.candidate_rows(found) if slim else found
        events = q.value_events(s, r, shuffle_partitions(spark, rows, ROWS_PER_SHUFFLE_PARTITION))
        return to_pandas(hub.candidates_fast(events, mono), "per-value pass", CRITICAL)

    found = pass_over(s_src, r_src)
    unsent = found[found["k_phantom"]]          # read in an unclean bucket; sent, maybe, in a clean one
    if narrowed and len(unsent):
        narrow_s, narrow_r = s_src, r_src
        s_src, r_src = (f.persist() for f in buckets.with_whole_values(
            spark, sends, reads, narrow_s, narrow_r, list(zip(unsent["run"].astype(int), unsent["value"]))))
        found = pass_over(s_src, r_src)     # fills the new caches from the narrowed ones: only then drop those
        narrow_s.unpersist()
        narrow_r.unpersist()
    if picked is not None:      # positions acked twice name divergent.candidates: the pick found the divergent
        doubles = pd.DataFrame(columns=divergent.AT)
    elif sums is None or (unplaced and not narrowed):
        doubles = divergent.double_acked(spark, sends, unplaced)
    elif len(crowded):     # the bucket sums found them: no second pass over every send (an anomaly-dense history)
        doubles = to_pandas(buckets.double_acked(spark, s_src, crowded), "double acks", CRITICAL)
    else:
        doubles = pd.DataFrame(columns=divergent.AT)
    return found, doubles, (s_src, r_src)


def _sends_summary(sends: DataFrame) -> pd.DataFrame:
    """(run, outcome, acks, idempotent, count), outcome and acks as strings."""
    return _named_summary(sends, q.summary_of_codes(to_pandas(q.sends_summary(sends), "sends summary", CRITICAL)))


def _named_summary(sends: DataFrame, codes: pd.DataFrame) -> pd.DataFrame:
    """The sends summary with outcome and acks codes as their names. A code outside the names the history format
    defines sends it back to grouping the strings, so nothing is misnamed."""
    if ((codes["outcome"] == len(q.OUTCOMES)) | (codes["acks"] == len(q.ACKS))).any():
        return to_pandas(q.sends_summary_by_name(sends), "sends summary by name", CRITICAL)
    return codes.assign(outcome=[q.OUTCOMES[int(c)] for c in codes["outcome"]],
                        acks=[q.ACKS[int(c)] for c in codes["acks"]])


def _breaching(spark: SparkSession, sends: DataFrame, run_ids: list[str], breach_windows) -> pd.DataFrame:
    """(run, op_id) of the min_isr_breach sends, once the model's windows are known."""
    by_run = breach_windows.result() if isinstance(breach_windows, Future) else breach_windows or {}
    windows = [(run_ids.index(r), int(p), int(a), int(b)) for r, ws in by_run.items() for p, a, b in ws
               if r in run_ids]
    if not windows:
        return pd.DataFrame({"run": [], "op_id": []})
    frame = q.small_frame(spark, windows, "run int, partition int, start long, end long")
    return to_pandas(q.breaching_sends(sends, frame), "min ISR breaches")


def _looked_up(spark: SparkSession, pool: ThreadPoolExecutor, found: pd.DataFrame, amb: pd.DataFrame,
               doubles: pd.DataFrame, unplaced: set[int], sums: Future | None, r_src: DataFrame,
               reads: DataFrame) -> tuple[pd.DataFrame, Future]:
    """The per-value rows with the ambiguous values `amb` decided (divergent.decide_ambiguous), and the divergent
    rows, when the driver did not pick the rows (a cluster's check, or a history too large to gather): the reads at
    the candidate positions known now are looked up first, and they hold the ambiguous values' reads, so no scan
    for those values, whose sends the pass brought."""
    known = divergent.known_positions(found, amb, doubles, unplaced,
                                      partial(buckets.acked_at, sums.result()) if sums is not None else None)
    there = pool.submit(_reads_at, spark, r_src, known)
    amb_reads = divergent.reads_of_ambiguous(spark, r_src, amb, there.result())
    per_value, amb_positions = divergent.decide_ambiguous(spark, found, amb, amb_reads)
    positions = divergent.candidates(found, amb_positions, doubles, unplaced)
    fetched = (there.result(), divergent.middle_positions(amb, amb_positions, unplaced)) if known is not None else None
    # narrowed sources hold every read at a candidate position (buckets); grouping every read does not
    return per_value, pool.submit(divergent.divergent_rows, spark, r_src if positions is not None else reads,
                                  positions, unplaced, fetched)


def _send_details(spark: SparkSession, sends: DataFrame, found: pd.DataFrame,
                  files: dict[str, Path] | None = None) -> pd.DataFrame:
    """The send columns of every candidate that was sent; many of them are read by the driver from `files` (the
    runs' directories, a local check's), else Spark looks them up."""
    keys = found.loc[found["op_id"].notna(), ["run", "op_id"]].astype("int64").drop_duplicates()
    if not len(keys):
        return pd.DataFrame(columns=["run", *SEND_FIELDS, "partition", "offset", "outcome"])
    if files is not None and len(keys) >= lookup_files.MIN_KEYS:
        return lookup_files.send_rows(files, keys, {c: SEND_COLUMNS[c] for c in q.SEND_DETAILS})
    return to_pandas(q.send_details(sends, q.small_frame(spark, keys, "run int, op_id long")), "send details")


def _with_breached(spark: SparkSession, sends: DataFrame, details: pd.DataFrame,
                   breached: pd.DataFrame) -> pd.DataFrame:
    """`_send_details` with those of the min_isr_breach sends not among them, fetched from every send (the pass
    may have run on fewer)."""
    if not len(breached):
        return details
    missing = breached[["run", "op_id"]].astype("int64").merge(details[["run", "op_id"]].astype("int64"),
                                                               how="left", indicator=True)
    missing = missing[missing["_merge"] == "left_only"][["run", "op_id"]].drop_duplicates()
    if not len(missing):
        return details
    more = to_pandas(q.send_details(sends, q.small_frame(spark, missing, "run int, op_id long")),
                     "send details: min ISR breaches")
    return pd.concat([details, more], ignore_index=True)


def _reads_at(spark: SparkSession, reads: DataFrame, known: pd.DataFrame | None) -> pd.DataFrame:
    """The reads at the `known` candidate positions (none if None: too many to look up one by one)."""
    if known is None or not len(known):
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in (("run", "int64"), ("partition", "int64"),
                             ("offset", "int64"), ("value", "string"), ("t_ns", "int64"), ("phase", "string"))})
    keys = q.small_frame(spark, known, "run int, partition int, offset long")
    return to_pandas(q.values_at(reads, keys), "divergent: values at candidates")


def _marks(spark: SparkSession, nonmono: pd.DataFrame) -> DataFrame:
    """The nonmonotonic sends' (run, op_id) as a table for Spark's per-value passes (queries.flagged)."""
    return q.small_frame(spark, nonmono[["run", "op_id"]], "run int, op_id long")


def _ambiguous_exact(spark: SparkSession, picked: Future, marks: Future) -> pd.DataFrame | None:
    """The exact per-value rows of the values the driver's summary found ambiguous (checkers.summary_files): every
    kind's predicate over the per-value columns the driver computed for them (checkers.exact_files); None when
    there are none."""
    p: narrow_files.Picked = picked.result()
    if p.summaries is None or not len(p.ambiguous_at):
        return None
    columns = load(spark, p.summaries, exact_files.NAME, exact_files.SCHEMA)
    return to_pandas(q.candidates_of_per_value(columns, marks.result()), "ambiguous: exact kinds")


def _with_run_id(frame: pd.DataFrame, run_ids: list[str]) -> pd.DataFrame:
    out = frame.assign(run_id=[run_ids[int(i)] for i in frame["run"]]).drop(columns="run")
    return out.astype({"partition": "int64", "first": "int64", "last": "int64"})


def _breach_rows(breached: pd.DataFrame, details: pd.DataFrame) -> pd.DataFrame:
    if not len(breached):
        return pd.DataFrame()
    rows = breached.astype({"run": "int64", "op_id": "int64"}).merge(
        details.astype({"run": "int64", "op_id": "int64"}), on=["run", "op_id"])
    return instance_rows([rows.assign(kind="min_isr_breach")])


def _per_value_rows(candidates: pd.DataFrame, details: pd.DataFrame) -> pd.DataFrame:
    """Instance rows of the kinds decided per value: send rows, and duplicate/phantom at the first position."""
    c = candidates.rename(columns={"partition": "first_p", "offset": "first_o"}) \
        .merge(details.drop(columns=["outcome"]), on=["run", "op_id"], how="left")
    rows = []
    for kind in PER_VALUE_KINDS:
        sel = c[c[f"k_{kind}"]]
        rows.append(sel[["run", "value", "partition", "offset", *SEND_FIELDS]]
                    .assign(kind=kind, t_read_ns=sel["t_read"]))
    for kind in PER_POSITION_KINDS:
        sel = c[c[f"k_{kind}"]]
        rows.append(sel[["run", "value", *SEND_FIELDS]]
                    .assign(kind=kind, partition=sel["first_p"], offset=sel["first_o"], multiplicity=sel["n"],
                            t_read_ns=sel["t_read"]))
    sel = c[c["k_lost_after_read"]]        # at the live read's position in the partition the drain lacks it
    rows.append(sel[["run", "value", *SEND_FIELDS]]
                .assign(kind="lost_after_read", partition=sel["lar_p"], offset=sel["lar_o"], t_read_ns=sel["t_read"]))
    return instance_rows(rows)


def _poll_skip_rows(spark: SparkSession, reads: DataFrame, gather: bool, runs: dict[str, Path]) -> pd.DataFrame:
    """Gaps in a live consumer's offsets that skip a record someone read, with the read that jumped. When the
    driver reads the files itself (`gather`), it finds the gaps in numpy (series_files)."""
    gaps = series_files.runs_poll_gaps(runs) if gather else to_pandas(q.poll_gaps(reads, gather), "poll gaps")
    if not len(gaps):
        return pd.DataFrame()
    gaps["gap"] = range(len(gaps))
    keyed = q.small_frame(spark, gaps[["run", "partition", "from_offset", "offset", "gap"]],
                          "run int, partition int, from_offset long, offset long, gap long")
    skipping = set(to_pandas(q.gaps_with_reads_between(reads, keyed), "poll gaps: reads between")["gap"].astype(int))
    gaps = gaps[gaps["gap"].isin(skipping)]
    if not len(gaps):
        return pd.DataFrame()
    if gather:      # the landing read by its consumer's name
        on = ["run", "consumer", "partition", "seq"]
        keys = q.small_frame(spark, gaps[on], "run int, consumer string, partition int, seq long")
        landed = to_pandas(q.reads_with(reads, keys), "poll gaps: landing reads")
    else:
        on = ["run", "stream", "seq"]
        keys = q.small_frame(spark, gaps[on], "run int, stream long, seq long")
        landed = to_pandas(q.reads_at(reads, keys), "poll gaps: landing reads")
    ints = {c: "int64" for c in on if c not in ("consumer", "stream")}
    landed = landed.rename(columns={"t_ns": "t_read_ns"}).astype(ints)
    rows = gaps.astype(ints).merge(landed, on=on)
    return instance_rows([rows.drop(columns=[c for c in ("stream", "gap") if c in rows]).assign(kind="poll_skip")])
