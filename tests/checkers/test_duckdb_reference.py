"""The DuckDB yardstick (bench/duckdb_reference.py) computes the same definitions as the pandas reference: the
same instance rows, counts, final reads and availability islands, on histories with injected anomalies and on
hand-built edge cases. Without this the benchmark's ratio would compare Spark with a different question."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_chaos.checkers.check import reference_findings
from kafka_chaos.history.reader import validate_run
from kafka_chaos.history.schema import READS_SCHEMA, SENDS_SCHEMA
from kafka_chaos.history.synthetic.inject import _RECIPES, inject_anomalies
from tests.checkers.conftest import MS, T, frames, read, send
from tests.checkers.synthetic_frames import clean_history

pytest.importorskip("duckdb", reason="duckdb is a test extra: pip install -e '.[test]'")
_spec = importlib.util.spec_from_file_location(
    "duckdb_reference", Path(__file__).resolve().parents[2] / "bench" / "duckdb_reference.py")
duck = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(duck)

INJECTABLE = [k for k in _RECIPES if k != "recovered"]


def _write(run_dir: Path, sends: pd.DataFrame, reads: pd.DataFrame) -> Path:
    (run_dir / "history").mkdir(parents=True)
    pq.write_table(pa.Table.from_pandas(sends, schema=SENDS_SCHEMA, preserve_index=False),
                   run_dir / "history/sends.parquet")
    pq.write_table(pa.Table.from_pandas(reads, schema=READS_SCHEMA, preserve_index=False),
                   run_dir / "history/reads.parquet")
    (run_dir / "meta.json").write_text(json.dumps({"run_id": run_dir.name, "partitions": 3,
                                                   "replication_factor": 3, "min_insync_replicas": 2}))
    return run_dir


def _rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(list(frame.columns), na_position="first", kind="stable").reset_index(drop=True)


def assert_same(run_dir: Path, windows=()) -> pd.DataFrame:
    """DuckDB and the pandas reference agree on everything a Findings holds; returns the instances."""
    run_id = run_dir.name
    ref = reference_findings({run_id: run_dir}, {run_id: validate_run(run_dir)}, {run_id: list(windows)})
    got = duck.find(run_dir, windows, duck.connect(threads=2))
    pd.testing.assert_frame_equal(_rows(got.instances), _rows(ref.instances))
    assert got.counts == ref.counts
    assert got.final_reads == ref.final_reads
    assert got.acks == ref.acks and got.idempotent == ref.idempotent
    for mine, theirs in ((got.ack_buckets, ref.ack_buckets), (got.pending_buckets, ref.pending_buckets)):
        assert len(theirs) > 0
        pd.testing.assert_frame_equal(_rows(mine[theirs.columns]), _rows(theirs), check_dtype=False)
    return got.instances


def _windows(sends: pd.DataFrame, rng: np.random.Generator) -> list[tuple[int, int, int]]:
    """Two breach windows around stretches of acks=all ok sends, so min_isr_breach has instances."""
    ok = sends[(sends["outcome"] == "ok") & sends["partition"].notna()].sort_values("t_invoke_ns")
    out = []
    for p in (0, 1):
        mine = ok[ok["partition"] == p]
        i = int(rng.integers(0, max(1, len(mine) - 6)))
        out.append((p, int(mine["t_invoke_ns"].iloc[i]), int(mine["t_complete_ns"].iloc[i + 4])))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_injected_anomalies_of_every_kind_give_the_same_rows(tmp_path, seed):
    rng = np.random.default_rng(seed)
    sends, reads = clean_history(sends=800, seed=seed % 5, consumers=1 + seed % 2)
    counts = {kind: int(rng.integers(0, 4)) for kind in INJECTABLE} | {"recovered": int(rng.integers(0, 3))}
    s, r = inject_anomalies(sends, reads, counts, rng)
    found = assert_same(_write(tmp_path / f"run{seed}", s, r), _windows(s, rng))
    kinds = found["kind"].value_counts()
    assert {k: int(kinds.get(k, 0)) for k in INJECTABLE} == {k: counts[k] for k in INJECTABLE}   # no more
    assert kinds.get("min_isr_breach", 0) >= 2


def test_a_clean_history_without_windows_gives_the_same_rows(tmp_path):
    sends, reads = clean_history(sends=600, seed=0, consumers=2)
    found = assert_same(_write(tmp_path / "clean", sends, reads))
    assert set(found["kind"]) == {"recovered"}


def test_edge_cases_of_the_contract_give_the_same_rows(tmp_path):
    """Values sent twice (the first row counts), null partitions and offsets, acks 0 and 1, a send never
    completed, phantoms at divergent positions (one shared with a value read at two positions), a skip over
    another consumer's read, a value read in two partitions."""
    s = [send("a", 0, 0), send("a", 1, 5, outcome="fail"), send("b", 0, 1, acks="1"), send("c", 0, 2, acks="0"),
         send("d", None, None, outcome="info"), send("e", None, 7), send("f", 1, 0, t=5), send("g", 1, 1, t=3),
         send("h", 2, 0, acks="1", idempotent=False), send("i", 2, 1, outcome="info"), send("j", 2, 2, t=9000),
         send("k", 1, 2, outcome="fail", t=4)]
    s[9]["t_complete_ns"] = None
    s[10]["t_complete_ns"] = T + 9300 * MS
    r = [read("a", 0, 0, consumer="c0"), read("b", 0, 1, consumer="c0"), read("z", 0, 1, consumer="c0"),
         read("a", 0, 4, consumer="c0"), read("e", 1, 9, consumer="c1"), read("f", 1, 0, consumer="c1"),
         read("g", 2, 5, consumer="c1"), read("g", 1, 1, consumer="c1"), read("i", 2, 1, consumer="c1", t=1500),
         read("a", 0, 0), read("z", 0, 1), read("f", 1, 0), read("d", 0, 3), read("k", 1, 2), read("j", 2, 2),
         read("x", 0, 2, consumer="c2"), read("y", 0, 6, consumer="c2"), read("w", 0, 4, consumer="c3")]
    sends, reads = frames(s, r)
    found = assert_same(_write(tmp_path / "edges", sends, reads), [(1, T, T + 10 * MS), (0, T, T + 1000 * MS)])
    kinds = set(found["kind"])
    assert {"duplicate", "phantom", "divergent", "failed_read", "recovered", "offset_mismatch", "lost",
            "lost_after_read", "nonmonotonic_send", "poll_skip", "min_isr_breach"} <= kinds
