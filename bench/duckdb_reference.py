"""The anomaly definitions in DuckDB SQL: the yardstick `kafka-chaos check` is timed against (issue 11).

Why: a user whose histories are too big for pandas would reach for DuckDB instead of Spark, so the checker's
speed is judged against DuckDB running the same definitions on the same file. Benchmark and test dependency only,
never on the product path. Everything is SQL over read_parquet (the history never becomes a pandas frame); only
the instances, counts and availability islands, a few rows, come back, as a checkers.findings.Findings that
compares row for row with the pandas reference (checkers/check.py reference_findings).

Shape: sends and reads meet once, in one aggregation per value, which decides every per-value kind for a value
sent at most once and read at one position (the contract's normal case); the few others go through the exact path
(value, partition, offset) -> (value, partition) -> value. "The send" of a value is its first row in the file, as
in the reference. Windows only where order matters (nonmonotonic_send, poll_skip, islands).

    python bench/duckdb_reference.py RESULTS_DIR [--no-model] [--threads N] [--compare-verdict]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa

from kafka_chaos.checkers import instances
from kafka_chaos.checkers.availability import BUCKET_NS, NEVER
from kafka_chaos.checkers.findings import Findings
from kafka_chaos.checkers.reference import Counts
from kafka_chaos.history.kinds import PREDICATES

OUTCOME_CODE = "CASE outcome WHEN 'ok' THEN 0 WHEN 'fail' THEN 1 WHEN 'info' THEN 2 ELSE 3 END"
ACKS_CODE = "CASE acks WHEN '0' THEN 0 WHEN '1' THEN 1 WHEN 'all' THEN 2 ELSE 3 END"
SEND_COLS = ("value", "partition", "offset", "producer", "process", "op_id", "acks", "idempotent", "t_invoke_ns",
             "t_complete_ns")
SEND_KINDS = ("lost", "failed_read", "recovered", "offset_mismatch")

# Every send and read as (value, p, o, src: 0 send, 1 live, 2 final, 3 other read, rn, code, t).
HUB = f"""(SELECT value, partition AS p, "offset" AS o, 0 AS src, rn, ({OUTCOME_CODE}) * 4 + ({ACKS_CODE}) AS code,
         NULL::BIGINT AS t FROM sends {{where}}
  UNION ALL
  SELECT value, partition, "offset", CASE phase WHEN 'live' THEN 1 WHEN 'final' THEN 2 ELSE 3 END, NULL, NULL, t_ns
  FROM reads {{where}})"""

# One aggregation per value decides every per-value kind when the value was sent at most once and read at one
# position at most (the contract's normal case). The others are `complex`: they take the exact path below.
# Sends and reads fill disjoint columns, so every aggregate skips the other side's NULLs without a FILTER.
PER_VALUE = f"""
SELECT *, n_sends <= 1 AND (n_reads = 0 OR (rp = rp_max AND ro = ro_max)) AS simple FROM (
  SELECT value, min(rn) AS s_rn, count(rn) AS n_sends, min(code) AS code, min(sp) AS s_p, min(so) AS s_o,
         count(rp) AS n_reads, min(rp) AS rp, max(rp) AS rp_max, min(ro) AS ro, max(ro) AS ro_max,
         bool_or(live) AS live, bool_or(fin) AS fin, min(t) AS t_read
  FROM (SELECT value, rn, ({OUTCOME_CODE}) * 4 + ({ACKS_CODE}) AS code, partition AS sp, "offset" AS so,
               NULL::INTEGER AS rp, NULL::BIGINT AS ro, NULL::BOOLEAN AS live, NULL::BOOLEAN AS fin,
               NULL::BIGINT AS t FROM sends
        UNION ALL
        SELECT value, NULL, NULL, NULL, NULL, partition, "offset", phase = 'live', phase = 'final', t_ns FROM reads)
  GROUP BY value)"""

SIMPLE = """
SELECT value, s_rn, n_sends, code, s_p, s_o, coalesce(fin AND s_p = rp, false) AS s_fin,
       coalesce(s_p = rp AND s_o = ro, false) AS at_acked, (n_reads > 0)::BIGINT AS n_pos, rp AS first_p,
       ro AS first_o, CASE WHEN live AND NOT fin THEN rp END AS lar_p, CASE WHEN live AND NOT fin THEN ro END AS lar_o,
       t_read
FROM pv WHERE simple"""

AT_POSITION = f"""
INSERT INTO at_pos BY NAME
SELECT value, p, o, min(rn) FILTER (WHERE src = 0) AS s_rn, arg_min_null(code, rn) FILTER (WHERE src = 0) AS code,
       count(*) FILTER (WHERE src = 0) AS n_sends, count(*) FILTER (WHERE src > 0) AS n_reads,
       min(t) FILTER (WHERE src > 0) AS t_first, bool_or(src = 1) AS live, bool_or(src = 2) AS fin
FROM {HUB.format(where="WHERE value IN (SELECT value FROM found WHERE part = 'complex')")} GROUP BY value, p, o
"""

# The exact path, over the complex values' (value, partition, offset) groups: per partition, then per value; "the
# send" is the first in the file.
EXACT = """
WITH at_part AS (
  SELECT value, p, min(s_rn) AS s_rn, arg_min_null(code, s_rn) AS code, arg_min_null(o, s_rn) AS s_o,
         arg_min_null(n_reads > 0, s_rn) AS at_acked, sum(n_sends) AS n_sends,
         count(*) FILTER (WHERE n_reads > 0) AS n_pos, min(o) FILTER (WHERE n_reads > 0) AS first_o,
         min(t_first) AS t_read, bool_or(fin) AS fin_p, bool_or(live) AS live_p,
         min(o) FILTER (WHERE live) AS live_o
  FROM at_pos GROUP BY value, p),
v AS (
  SELECT value, min(s_rn) AS s_rn, sum(n_sends) AS n_sends, arg_min_null(code, s_rn) AS code,
         arg_min_null(p, s_rn) AS s_p, arg_min_null(s_o, s_rn) AS s_o, arg_min_null(fin_p, s_rn) AS s_fin,
         arg_min_null(at_acked, s_rn) AS at_acked, sum(n_pos) AS n_pos,
         min({'p': p, 'o': first_o}) FILTER (WHERE n_pos > 0) AS first,
         min({'p': p, 'o': live_o}) FILTER (WHERE live_p AND NOT fin_p) AS lar, min(t_read) AS t_read
  FROM at_part GROUP BY value)
SELECT value, s_rn, n_sends, code, s_p, s_o, s_fin, at_acked, n_pos, first.p AS first_p, first.o AS first_o,
       lar.p AS lar_p, lar.o AS lar_o, t_read
FROM v"""

# The definitions: each per-value kind's predicate as history/kinds.py declares it (the Spark check evaluates the same
# text), over either path's columns bound to history.kinds.PER_VALUE_COLUMNS.
FLAG_COLUMNS = ",\n         ".join(f"coalesce({pred}, false) AS k_{kind}" for kind, pred in PREDICATES.items())
FLAGS = f"""
SELECT 'value' AS part, * FROM (
  SELECT value, s_rn, n_sends, n_pos, first_p, first_o, lar_p, lar_o, t_read,
         {FLAG_COLUMNS}
  FROM (SELECT *, s_rn IS NOT NULL AS sent, coalesce(s_rn IS NOT NULL AND code // 4 = 0, false) AS ok,
               coalesce(s_rn IS NOT NULL AND code // 4 = 1, false) AS failed,
               coalesce(s_rn IS NOT NULL AND code // 4 = 2, false) AS indeterminate,
               coalesce(s_rn IS NOT NULL AND code % 4 IN (1, 2), false) AS acked_level
        FROM ({{source}})))
WHERE {" OR ".join(f"k_{kind}" for kind in PREDICATES)}
   OR n_sends > 1
"""

# The one pass over the whole history. pv is materialised once, in memory, and yields only small results: the
# simple values' candidates, the complex values, and the positions two simple values were read at.
FOUND = f"""
CREATE TEMP TABLE found AS
WITH pv AS MATERIALIZED ({PER_VALUE})
{FLAGS.format(source=SIMPLE)}
UNION ALL BY NAME SELECT 'complex' AS part, value FROM pv WHERE NOT simple
UNION ALL BY NAME SELECT 'position' AS part, rp AS first_p, ro AS first_o FROM pv WHERE simple AND n_reads > 0
                  GROUP BY rp, ro HAVING count(*) >= 2
"""

# Positions read with several values, from the reads at the few positions that may be: where two simple values or
# any complex value was read (a divergent position is one of these).
DIVERGENT = """
WITH maybe AS (SELECT first_p AS p, first_o AS o FROM found WHERE part = 'position'
               UNION SELECT p, o FROM at_pos WHERE n_reads > 0)
SELECT r.partition, r."offset", min(r.value) AS value, count(DISTINCT r.value) AS multiplicity,
       min(r.t_ns) AS t_read_ns
FROM reads r SEMI JOIN maybe m ON r.partition = m.p AND r."offset" = m.o
GROUP BY r.partition, r."offset" HAVING count(DISTINCT r.value) >= 2
"""

# ok sends in invoke order per (process, producer, partition); file order breaks ties, as the reference's
# stable sort does.
NONMONOTONIC = """
SELECT rn FROM (SELECT rn, "offset",
                       lag("offset") OVER (PARTITION BY process, producer, partition
                                           ORDER BY t_invoke_ns, op_id, rn) AS prev
                FROM first_sends WHERE outcome = 'ok' AND "offset" >= 0)
WHERE "offset" < prev
"""

GAPS = """
CREATE TEMP TABLE gaps AS
SELECT * FROM (SELECT rn, partition, "offset",
                      lag("offset") OVER (PARTITION BY consumer, partition ORDER BY seq, rn) AS from_offset
               FROM reads WHERE phase = 'live')
WHERE "offset" > from_offset + 1
"""

# the smallest offset read in the partition above a; a skip if it lies below b. Then the read that jumped.
POLL_SKIPS = """
WITH skips AS (
  SELECT g.rn, g.from_offset FROM gaps g
  ASOF JOIN (SELECT DISTINCT partition AS p, "offset" AS o FROM reads) r ON g.partition = r.p AND g.from_offset < r.o
  WHERE r.o < g."offset")
SELECT r.partition, r."offset", s.from_offset, r.value, r.consumer, r.t_ns AS t_read_ns
FROM reads r JOIN skips s ON r.rn = s.rn
"""


def islands_sql(buckets: str, gap: int = BUCKET_NS) -> str:
    """checkers.availability.islands in SQL: spans merged where one starts within `gap` of the furthest end so far."""
    return f"""
    WITH b AS ({buckets}),
    m AS (SELECT *, max(last) OVER (PARTITION BY partition ORDER BY first, last
                                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM b),
    i AS (SELECT *, sum(CASE WHEN before IS NULL OR first - {gap} > before THEN 1 ELSE 0 END)
                    OVER (PARTITION BY partition ORDER BY first, last ROWS UNBOUNDED PRECEDING) AS island FROM m)
    SELECT partition, min(first) AS first, max(last) AS last FROM i GROUP BY partition, island
    ORDER BY partition, first"""


ACK_BUCKETS = f"""
SELECT partition::BIGINT AS partition, min(t_complete_ns) AS first, max(t_complete_ns) AS last
FROM sends WHERE acks IN ('1', 'all') AND partition IS NOT NULL AND outcome = 'ok' AND t_complete_ns IS NOT NULL
GROUP BY partition, t_complete_ns // {BUCKET_NS}"""

PENDING_BUCKETS = f"""
SELECT partition::BIGINT AS partition, min(t_invoke_ns) AS first, max(coalesce(t_complete_ns, {NEVER})) AS last
FROM sends WHERE acks IN ('1', 'all') AND partition IS NOT NULL
GROUP BY partition, t_invoke_ns // {BUCKET_NS}"""


def _quote(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def connect(threads: int | None = None, memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB on all cores (or `threads`), spilling to a temporary directory, no progress bar."""
    con = duckdb.connect(config={"temp_directory": tempfile.gettempdir() + "/kafka-chaos-duckdb"})
    con.execute("SET enable_progress_bar = false")
    con.execute("SET preserve_insertion_order = false")     # every result is sorted where order matters
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    if memory_limit:
        con.execute(f"SET memory_limit = '{memory_limit}'")
    return con


def _frame(con, sql: str) -> pd.DataFrame:
    """A small result as pandas with nullable integers (as history.reader.read_table gives them)."""
    table = con.sql(sql).to_arrow_table()
    return table.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype()}.get)


def _views(con, run_dir: Path) -> None:
    history = Path(run_dir) / "history"
    for name in ("sends", "reads"):
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * EXCLUDE (file_row_number), "
                    f"file_row_number AS rn FROM read_parquet({_quote(history / f'{name}.parquet')}, "
                    "file_row_number = true)")


def summaries(con) -> tuple[Counts, dict[int, int], tuple, tuple]:
    """Counts (every send row, as the reference counts them), final reads per partition, acks and idempotence."""
    s = _frame(con, "SELECT outcome, acks, idempotent, count(*) AS n FROM sends GROUP BY ALL")
    r = _frame(con, "SELECT phase, partition, count(*) AS n FROM reads GROUP BY ALL")
    by_outcome = s.groupby("outcome")["n"].sum()
    fin = r[r["phase"] == "final"]
    counts = Counts(sends=int(s["n"].sum()), ok=int(by_outcome.get("ok", 0)), fail=int(by_outcome.get("fail", 0)),
                    info=int(by_outcome.get("info", 0)), reads=int(r["n"].sum()), final_reads=int(fin["n"].sum()))
    final_reads = {int(p): int(n) for p, n in zip(fin["partition"], fin["n"])}
    return (counts, final_reads, tuple(sorted(s["acks"].unique())),
            tuple(sorted(bool(x) for x in s["idempotent"].unique())))


def availability_islands(con) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ack and pending islands of checkers.availability (partition, first, last), as int64."""
    out = []
    for buckets in (ACK_BUCKETS, PENDING_BUCKETS):
        frame = con.sql(islands_sql(buckets)).df()
        out.append(frame.astype({"partition": "int64", "first": "int64", "last": "int64"}))
    return out[0], out[1]


def _first_sends(con, duplicated: bool) -> None:
    """first_sends: one row per value (its first in the file). Values are unique by contract, so the filter
    runs only when the hub saw a value sent twice."""
    where = "WHERE rn IN (SELECT s_rn FROM found WHERE n_sends > 1) OR value NOT IN " \
            "(SELECT value FROM found WHERE n_sends > 1)" if duplicated else ""
    con.execute(f"CREATE OR REPLACE TEMP VIEW first_sends AS SELECT * FROM sends {where}")


def _breaches(con, windows) -> pd.DataFrame:
    """File rows of acks=all ok sends acked wholly inside a (partition, start, end) window."""
    if not len(windows):
        return pd.DataFrame({"rn": pd.Series(dtype="int64")})
    con.register("windows", pa.table({"p": [int(w[0]) for w in windows], "a": [int(w[1]) for w in windows],
                                      "b": [int(w[2]) for w in windows]}))
    return con.sql(f"""
        SELECT DISTINCT s.rn FROM first_sends s JOIN windows w ON s.partition = w.p
        WHERE s.outcome = 'ok' AND s.acks = 'all' AND s.t_invoke_ns >= w.a
          AND coalesce(s.t_complete_ns, {NEVER}) <= w.b""").df()


def _send_rows(con, rns: list[int]) -> pd.DataFrame:
    """The send columns of the given file rows (a few: the candidates)."""
    if not rns:
        return pd.DataFrame(columns=["rn", *SEND_COLS])
    con.register("wanted", pa.table({"rn": pa.array(sorted({int(r) for r in rns}), pa.int64())}))
    cols = ", ".join(f'"{c}"' for c in SEND_COLS)
    return _frame(con, f"SELECT rn, {cols} FROM sends WHERE rn IN (SELECT rn FROM wanted)")


def _first_reads(con, cand: pd.DataFrame, more: pd.Series) -> pd.Series:
    """value -> first read (t_ns) of the candidates, and of the other values wanted (breaches, reorderings)."""
    known = cand.set_index("value")["t_read"]
    extra = sorted(set(more.dropna()) - set(known.index))
    if extra:
        con.register("extra", pa.table({"value": pa.array(extra, pa.string())}))
        got = _frame(con, "SELECT value, min(t_ns) AS t_read FROM reads WHERE value IN (SELECT value FROM extra) "
                          "GROUP BY value")
        known = pd.concat([known, got.set_index("value")["t_read"]])
    return known


def find_instances(con, windows=()) -> pd.DataFrame:
    """The instance table (checkers.instances) of the run whose views `sends` and `reads` are set up."""
    con.execute(FOUND)
    con.execute("CREATE OR REPLACE TEMP TABLE at_pos (value VARCHAR, p INTEGER, o BIGINT, s_rn BIGINT, code INT, "
                "n_sends BIGINT, n_reads BIGINT, t_first BIGINT, live BOOLEAN, fin BOOLEAN)")
    if con.sql("SELECT count(*) FROM found WHERE part = 'complex'").fetchall()[0][0]:
        con.execute(AT_POSITION)      # the complex values only: usually none
    con.execute(f"INSERT INTO found BY NAME {FLAGS.format(source=EXACT)}")
    cand = _frame(con, "SELECT * EXCLUDE (part) FROM found WHERE part = 'value'")
    _first_sends(con, bool((cand["n_sends"] > 1).any()))
    breach = _breaches(con, windows)
    nonmono = con.sql(NONMONOTONIC).df()
    sends = _send_rows(con, [*cand["s_rn"].dropna(), *breach["rn"], *nonmono["rn"]]).set_index("rn")
    t_read = _first_reads(con, cand, sends["value"])
    rows = []
    for kind in SEND_KINDS:
        rns = cand.loc[cand[f"k_{kind}"], "s_rn"].astype("int64")
        rows.append(sends.loc[rns].assign(kind=kind))
    for kind, rns in (("min_isr_breach", breach["rn"]), ("nonmonotonic_send", nonmono["rn"])):
        rows.append(sends.loc[rns.astype("int64")].assign(kind=kind))
    details = sends.drop(columns=["partition", "offset"]).drop_duplicates("value")
    for kind, p, o in (("lost_after_read", "lar_p", "lar_o"), ("duplicate", "first_p", "first_o"),
                       ("phantom", "first_p", "first_o")):
        sel = cand[cand[f"k_{kind}"]]
        found = pd.DataFrame({"kind": kind, "value": sel["value"], "partition": sel[p], "offset": sel[o]})
        if kind != "lost_after_read":
            found["multiplicity"] = sel["n_pos"]
        rows.append(found.merge(details, on="value", how="left"))
    rows = [r.assign(t_read_ns=r["value"].map(t_read)) for r in rows if len(r)]
    if con.sql("SELECT count(*) FROM found WHERE part = 'position'").fetchall()[0][0] + \
            con.sql("SELECT count(*) FROM at_pos").fetchall()[0][0]:
        rows.append(_frame(con, DIVERGENT).assign(kind="divergent"))
    con.execute(GAPS)
    if con.sql("SELECT count(*) FROM gaps").fetchall()[0][0]:
        rows.append(_frame(con, POLL_SKIPS).assign(kind="poll_skip"))
    rows = [instances.typed(r.reset_index(drop=True)) for r in rows if len(r)]
    return instances.normalise(pd.concat(rows, ignore_index=True)) if rows else instances.empty()


def find(run_dir: Path, windows=(), con=None) -> Findings:
    """One run's Findings, computed in DuckDB. windows: (partition, start_ns, end_ns) breach windows."""
    run_dir = Path(run_dir)
    run_id = json.loads((run_dir / "meta.json").read_text())["run_id"]
    con = con or connect()
    _views(con, run_dir)
    found = find_instances(con, windows)
    counts, final_reads, acks, idempotent = summaries(con)
    ack_b, pending_b = availability_islands(con)
    return Findings(instances=found.assign(run_id=run_id), counts={run_id: counts},
                    ack_buckets=ack_b.assign(run_id=run_id), pending_buckets=pending_b.assign(run_id=run_id),
                    final_reads={run_id: final_reads}, acks={run_id: acks}, idempotent={run_id: idempotent})


def breach_windows(run_dir: Path) -> list[tuple[int, int, int]]:
    """The certain under-min-ISR windows, from the ISR model exactly as `kafka-chaos check` gets them."""
    from kafka_chaos.checkers.check import _breach_windows, model_for
    from kafka_chaos.history.meta import load_meta
    from kafka_chaos.history.reader import validate_run
    model, samples = model_for(validate_run(run_dir), load_meta(run_dir))
    return _breach_windows(model, samples)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--no-model", action="store_true", help="no breach windows (min_isr_breach is not looked for)")
    ap.add_argument("--threads", type=int, help="DuckDB threads (default: all cores)")
    ap.add_argument("--memory-limit", help="DuckDB memory_limit, e.g. 12GB (default: DuckDB's, 80%% of RAM)")
    ap.add_argument("--compare-verdict", action="store_true",
                    help="check the counts, anomaly counts, stalls and rows against the run's verdict.json and "
                    "anomalies.parquet (read only)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    windows = [] if args.no_model else breach_windows(args.run_dir)
    t_model = time.perf_counter() - t0
    findings = find(args.run_dir, windows, connect(args.threads, args.memory_limit))
    run_id = next(iter(findings.counts))
    kinds = findings.instances["kind"].value_counts()
    print(json.dumps({"run_id": run_id, "seconds": round(time.perf_counter() - t0, 2),
                      "model_s": round(t_model, 2), "breach_windows": len(windows),
                      "counts": findings.counts[run_id].as_dict(), "anomalies": {k: int(n) for k, n in kinds.items()},
                      "ack_islands": len(findings.ack_buckets), "pending_islands": len(findings.pending_buckets),
                      "final_reads": findings.final_reads[run_id], "acks": findings.acks[run_id],
                      "idempotent": findings.idempotent[run_id]}))
    if args.compare_verdict:
        from verdict_compare import compare_verdict  # bench/, beside this script
        diffs = compare_verdict(args.run_dir, findings)
        print("\n".join(diffs) if diffs else "verdict.json and anomalies.parquet: counts, anomaly counts, stalls and "
              "instance rows all equal")
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
