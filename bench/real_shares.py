"""Benchmark helper (not a test): the anomaly shares of real checked runs, beside the bench shapes' own.

For each results directory with a verdict.json: sends, the shares of failed and indeterminate sends, of acked writes
lost, of values duplicated or recovered, live reads per send, stalls and faults per minute. It is what the `real`
bench shape (bench/check_bench.py --shapes real, history/synthetic/tile.py) takes from a real run, and how far the
`heavy` shape lies beyond any of them. The densest run is the `real` shape's default source.

    python bench/real_shares.py /work/realruns/r            # every run under a root
    python bench/real_shares.py RUN_DIR [RUN_DIR ...] --markdown
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq


def shares(run: Path) -> dict | None:
    verdict = run / "verdict.json"
    if not verdict.exists():
        return None
    v = json.loads(verdict.read_text())
    c, a = v.get("counts") or {}, v.get("anomalies") or {}
    sends = c.get("sends") or 0
    if not sends:
        return None
    reads = pq.read_table(run / "history/reads.parquet", columns=["phase"])
    live = int(pc.sum(pc.equal(reads["phase"], "live")).as_py() or 0)
    faults = run / "history/faults.parquet"
    starts = int(pc.sum(pc.equal(pq.read_table(faults, columns=["action"])["action"], "start")).as_py() or 0) \
        if faults.exists() else 0
    meta = json.loads((run / "meta.json").read_text())
    minutes = max((meta.get("end_ns", 0) - meta.get("start_ns", 0)) / 60e9, 1e-9)
    ok = c.get("ok") or 1
    return {"run": run.name, "sends": sends, "fail": c.get("fail", 0) / sends, "info": c.get("info", 0) / sends,
            "lost_per_ok": a.get("lost", 0) / ok, "lost_after_read": a.get("lost_after_read", 0) / sends,
            "duplicate": a.get("duplicate", 0) / sends, "recovered": a.get("recovered", 0) / sends,
            "divergent": a.get("divergent", 0) / sends, "live_reads_per_send": live / sends,
            "stalls_per_min": a.get("stall", 0) / minutes, "faults_per_min": starts / minutes,
            "anomalous": (c.get("fail", 0) + c.get("info", 0) + sum(a.get(k, 0) for k in (
                "lost", "lost_after_read", "duplicate", "divergent", "recovered"))) / sends}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", type=Path, help="results directories or roots of them")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table (docs/measurements.md)")
    args = ap.parse_args()
    runs = [p for path in args.paths for p in ([path] if (path / "meta.json").exists() else sorted(path.iterdir()))]
    rows = [r for r in map(shares, runs) if r]
    cols = ["sends", "fail", "info", "lost_per_ok", "lost_after_read", "duplicate", "recovered", "divergent",
            "live_reads_per_send", "stalls_per_min", "faults_per_min", "anomalous"]

    def cell(r, k):
        x = r[k]
        return f"{x:,}" if isinstance(x, int) else f"{x:.2%}" if k not in (
            "live_reads_per_send", "stalls_per_min", "faults_per_min") else f"{x:.2f}"
    if args.markdown:
        print("| run | " + " | ".join(cols) + " |")
        print("|---|" + "---|" * len(cols))
        for r in rows:
            print(f"| {r['run']} | " + " | ".join(cell(r, k) for k in cols) + " |")
    else:
        for r in rows:
            print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
