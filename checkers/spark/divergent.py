"""Divergent positions (one offset, several values read) without grouping every read by position.

The per-value pass (checkers.spark.hub) already brings back every value that was not simply read where it was
acked. A position can hold two values only if
- a value read there was not acked there: phantom, failed, recovered, offset mismatch, stray, lost after read, all
  among the collected rows at their one read position; or a value read at several positions (ambiguous, decided
  exactly, with every position it was read at);
- or two values were acked there and both read there and nowhere else (the final drain read that offset twice,
  the log changing in between): positions acked twice (hub.double_acked);
- or the run acknowledged acks=0 writes, which carry no offset: such runs group every read by position.
The candidate positions are then looked up in the reads, and those with two or more values are instances.
"""
from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_chaos.checkers.spark import hub
from kafka_chaos.checkers.spark import queries as q
from kafka_chaos.checkers.spark.collect import instance_rows, to_pandas

MAX_CANDIDATE_POSITIONS = 1_000_000     # more: group every read by position instead
AT = ["run", "partition", "offset"]


AMBIGUOUS_SENDS = "run int, value string, partition int, offset long, outcome string, acks string, op_id long"
AMBIGUOUS_READS = "run int, value string, partition int, offset long, phase string, t_ns long"
VALUE = ["run", "value"]


EXTRAS = [*hub.LAST, hub.READS, *hub.SENT]      # the pass's columns only the ambiguous values' follow-ups read


def split_ambiguous(found: pd.DataFrame) -> pd.DataFrame:
    """The ambiguous values' rows of the per-value pass, with its EXTRAS, which are then deleted from `found` in
    place: no other row needs them, and on 100M anomaly-dense sends (6.6M candidates) six nullable integer columns
    are ~0.36 GB of the driver beside the JVM's heap while the last jobs run."""
    amb = found.loc[found["k_ambiguous"]].copy()
    for column in EXTRAS:
        del found[column]          # nullable integers: a block each, freed without copying the others
    return amb


def decide_ambiguous(spark: SparkSession, found: pd.DataFrame, amb: pd.DataFrame, reads: pd.DataFrame):
    """The per-value rows, with the ambiguous values `amb` (`split_ambiguous`) decided by the three-level
    definitions (queries.candidates) over just their sends and reads: the send as the pass saw it (hub.SENT: values
    are unique in a run), the reads from `reads_of_ambiguous`. A scan of the history for them cost 7-8 CPU-s at 10M
    sends. Also the positions those values were read at."""
    if not len(amb):
        return with_exact(found, None), pd.DataFrame(columns=AT)
    mono = q.small_frame(spark, found.loc[found["k_nonmonotonic_send"], ["run", "op_id"]], "run int, op_id long")
    sent = amb[amb["code"].fillna(0) > 0]
    s = q.small_frame(spark, pd.DataFrame({"run": sent["run"], "value": sent["value"], "partition": sent["s_p"],
                                           "offset": sent["s_o"], **q.names_of_send_code(sent["code"]),
                                           "op_id": sent["op_id"]}), AMBIGUOUS_SENDS)
    r = q.small_frame(spark, reads[[c.split()[0] for c in AMBIGUOUS_READS.split(",")]], AMBIGUOUS_READS)
    positions = reads[AT].astype("int64").drop_duplicates()
    return with_exact(found, exact_kinds(s, r, mono)), positions


def exact_kinds(sends: DataFrame, reads: DataFrame, nonmonotonic: DataFrame) -> pd.DataFrame:
    """The per-value rows of the ambiguous values whose every send and read are `sends` and `reads`, by the
    three-level definitions (queries.candidates); nonmonotonic: (run, op_id)."""
    at = q.value_positions(q.value_events(sends, reads, 1))
    return to_pandas(q.candidates(at, nonmonotonic), "ambiguous: exact kinds")


def with_exact(found: pd.DataFrame, exact: pd.DataFrame | None) -> pd.DataFrame:
    """The per-value rows: the pass's rows `found` of the values it decided, and the `exact` rows of the ambiguous
    ones (`exact_kinds`)."""
    kinds = [f"k_{k}" for k in q.CANDIDATE_KINDS]
    decided = found.loc[~found["k_ambiguous"] & found[kinds].any(axis=1),
                        [c for c in found.columns if c not in (*hub.HUB_FLAGS, *EXTRAS)]]     # one copy, not two
    return pd.concat([decided, exact], ignore_index=True) if exact is not None else decided


def reads_of_ambiguous(spark: SparkSession, reads: DataFrame, amb: pd.DataFrame,
                       there: pd.DataFrame) -> pd.DataFrame:
    """Every read of the ambiguous values `amb` (`split_ambiguous`): those among `there` (the reads at
    `known_positions`, which hold each one's first and last), and for a value read more often than that (READS: at
    three positions or more) all of its reads, looked up by value."""
    amb = amb[[*VALUE, hub.READS]].astype({"run": "int64", hub.READS: "int64"})
    if not len(amb):
        return there.iloc[0:0]
    got = there.astype({"run": "int64"}).merge(amb[VALUE], on=VALUE)
    n = got.groupby(VALUE).size().rename("got").reset_index()
    short = amb.merge(n, on=VALUE, how="left").fillna({"got": 0})
    short = short[short["got"] < short[hub.READS]][VALUE]
    if not len(short):
        return got
    keys = q.small_frame(spark, short, "run int, value string")
    more = to_pandas(q.reads_of(reads, keys), "ambiguous: reads beyond their ends").astype({"run": "int64"})
    got = got.merge(short, on=VALUE, how="left", indicator=True)
    return pd.concat([got[got["_merge"] == "left_only"].drop(columns="_merge"), more], ignore_index=True)


def known_positions(found: pd.DataFrame, amb: pd.DataFrame, doubles: pd.DataFrame, unplaced: set[int],
                    acked=None) -> pd.DataFrame | None:
    """The candidate positions (`candidates`) known as soon as the per-value pass is back: all but the middle
    positions of a value read at three or more (the first and last come with the pass, in `amb`:
    `split_ambiguous`). None: too many.

    acked: (positions) -> whether a send was acked at each (buckets.acked_at), if known. Then only the positions
    that can hold two values are kept: where two candidate values were read, where a send was acked, and an
    ambiguous value's first and last (reads_of_ambiguous takes its reads from there). Any other value read at a
    position was acked there (a value read where it was not acked, at two positions, or never acked is a
    candidate), so a position with one candidate value and no ack holds one value. On an anomaly-dense history
    most candidates are timed-out sends read where nothing was acked. Middle positions are looked up whatever they
    hold (`middle_positions`)."""
    last = amb[["run", *hub.LAST]].set_axis(AT, axis=1)
    out = candidates(found, last, doubles, unplaced, also_ambiguous=True)
    if out is None or acked is None or not len(out):
        return out
    pairs = pd.concat([found.loc[found["n"] > 0, ["value", *AT]],
                       amb[["value", "run", *hub.LAST]].set_axis(["value", *AT], axis=1)], ignore_index=True)
    pairs = pairs.astype({c: "int64" for c in AT}).drop_duplicates()
    shared = pairs.groupby(AT, sort=False).size()
    shared = shared[shared >= 2].index.to_frame(index=False)
    kept = pd.concat([out[acked(out)], shared, ends(amb)], ignore_index=True).drop_duplicates()
    return kept[~kept["run"].isin(unplaced)].reset_index(drop=True)


def ends(amb: pd.DataFrame) -> pd.DataFrame:
    """The first and the last position (hub.LAST) each of the ambiguous values `amb` was read at."""
    return pd.concat([amb[AT], amb[["run", *hub.LAST]].set_axis(AT, axis=1)], ignore_index=True).astype("int64")


def runs_without_positions(send_summary: pd.DataFrame) -> set[int]:
    """Runs with acks=0 writes acknowledged: no offset comes back, so no read can be matched to an acked
    position."""
    ok0 = send_summary[(send_summary["outcome"] == "ok") & (send_summary["acks"] == "0")]
    return {int(r) for r in ok0["run"]}


def double_acked(spark: SparkSession, sends: DataFrame, unplaced: set[int]) -> pd.DataFrame:
    """(run, partition, offset) acked twice, outside the runs in `unplaced`: the buckets first, then the positions
    in just those."""
    placed = sends if not unplaced else sends.where(~F.col("run").isin(*sorted(unplaced)))
    buckets = to_pandas(hub.crowded_buckets(placed), "double acks: buckets")
    if not len(buckets):
        return pd.DataFrame(columns=AT)
    keys = q.small_frame(spark, buckets[["run", "partition", "bucket"]], "run int, partition int, bucket long")
    return to_pandas(hub.double_acked(placed, keys), "double acks")


def candidates(found: pd.DataFrame, amb_positions: pd.DataFrame, doubles: pd.DataFrame,
               unplaced: set[int], also_ambiguous: bool = False) -> pd.DataFrame | None:
    """Positions that may hold two values, outside the runs in `unplaced` (None: too many; group every read).
    also_ambiguous: the ambiguous values' first positions too (`known_positions`)."""
    read = found["n"] > 0
    single = found[read if also_ambiguous else ~found["k_ambiguous"] & read][AT]
    frames = [f.astype({c: "int64" for c in AT})[AT] for f in (single, amb_positions, doubles) if len(f)]
    if not frames:
        return pd.DataFrame(columns=AT)
    out = pd.concat(frames, ignore_index=True).drop_duplicates()
    out = out[~out["run"].isin(unplaced)]
    return None if len(out) > MAX_CANDIDATE_POSITIONS else out


def divergent_rows(spark: SparkSession, reads: DataFrame, positions: pd.DataFrame | None,
                   unplaced: set[int], fetched: tuple[pd.DataFrame, pd.DataFrame] | None = None) -> pd.DataFrame:
    """One row per position read with several values: the smallest value, how many, the first read.
    positions: `candidates`; unplaced: runs whose every read is grouped by position (all runs if positions is
    None); fetched: (the reads at every one of `positions` but some, those others) when the reads were looked up
    before the positions were all known (`known_positions`, `middle_positions`): only those others are."""
    grouped = set(unplaced) if positions is not None else None       # None: every run
    have, lookup = [], [positions] if positions is not None else []
    if fetched is not None and positions is not None:
        there, rest = fetched
        have, lookup = [there[[*AT, "value", "t_ns"]]], [rest]
    if grouped is None or grouped:
        scope = reads if grouped is None else reads.where(F.col("run").isin(*sorted(grouped)))
        lookup.append(to_pandas(hub.position_extremes(scope), "divergent: every position"))
    lookup = [f for f in lookup if len(f)]
    if lookup:
        wanted = pd.concat(lookup, ignore_index=True).astype("int64").drop_duplicates()
        keys = q.small_frame(spark, wanted[AT], "run int, partition int, offset long")
        have.append(to_pandas(q.values_at(reads, keys), "divergent: values at candidates"))
    have = [f for f in have if len(f)]
    if not have:
        return pd.DataFrame()
    return instance_rows([several_values(pd.concat(have, ignore_index=True)).assign(kind="divergent")])


def middle_positions(amb: pd.DataFrame, amb_positions: pd.DataFrame, unplaced: set[int]) -> pd.DataFrame:
    """The positions the ambiguous values `amb` were read at other than their first and last (hub.LAST): the
    candidate positions `known_positions` could not name. A value read at two positions has none."""
    at = amb_positions.astype("int64").merge(ends(amb).drop_duplicates(), on=AT,
                                             how="left", indicator=True)
    at = at[(at["_merge"] == "left_only") & ~at["run"].isin(unplaced)]
    return at[AT].reset_index(drop=True)


def several_values(read: pd.DataFrame) -> pd.DataFrame:
    """Per position (run, partition, offset) read with two or more distinct values: the least value, how many
    distinct, the first read. Values factorised to integers first: grouping 1.3M reads at 600k candidate positions
    of an anomaly-dense history by the strings themselves (nunique) took the driver ~40 s."""
    if not len(read):
        return pd.DataFrame(columns=[*AT, "value", "multiplicity", "t_read_ns"])
    code, _ = pd.factorize(read["value"])
    distinct = read[AT].assign(code=code).drop_duplicates()
    n = distinct.groupby(AT, sort=False).size()
    several = n[n >= 2].rename("multiplicity").reset_index()
    if not len(several):
        return pd.DataFrame(columns=[*AT, "value", "multiplicity", "t_read_ns"])
    at = read.merge(several[AT], on=AT)
    rows = at.groupby(AT, as_index=False).agg(value=("value", "min"), t_read_ns=("t_ns", "min"))
    return rows.merge(several, on=AT)
