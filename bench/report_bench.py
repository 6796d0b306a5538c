"""Size and render time of the HTML report for a 1M-operation history, measured in headless chromium.

    python bench/report_bench.py [--sends 1000000] [--lost 20000] [--loads 3] [--keep DIR]

Writes a synthetic run (history.synthetic) plus a hand-made verdict.json and anomalies.parquet with `--lost`
lost writes (so the anomaly markers and tables are at their caps), builds report.html, then opens it `--loads`
times in one headless chromium. "render" is the page's own clock (performance.now() when the last plot was
drawn, from navigation start), so it includes parsing the inline plotly.js. Targets: under 1.5 MB, under 3 s.
The machine is shared: the load average is printed beside the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafka_chaos.history.schema import ANOMALIES_SCHEMA, ANOMALY_KINDS  # noqa: E402
from kafka_chaos.history.synthetic import write_synthetic_run  # noqa: E402
from kafka_chaos.report.browser import HeadlessChromium  # noqa: E402
from kafka_chaos.report.bundle import plotly_js  # noqa: E402
from kafka_chaos.report.page import write_report  # noqa: E402

SIZE_TARGET_MB = 1.5
RENDER_TARGET_S = 3


def add_checker_output(run: Path, lost: int, seed: int = 1) -> None:
    """A verdict and `lost` lost-write anomalies drawn from the acknowledged sends (a tenth judged violations)."""
    sends = pq.read_table(run / "history/sends.parquet",
                          columns=["op_id", "producer", "partition", "offset", "value", "outcome",
                                   "t_invoke_ns", "t_complete_ns"]).to_pandas()
    acked = sends[(sends["outcome"] == "ok") & sends["offset"].notna()]
    rows = acked.sample(n=min(lost, len(acked)), random_state=seed).sort_values("t_complete_ns")
    violation = np.arange(len(rows)) % 10 == 0
    table = pa.table({
        "kind": ["lost"] * len(rows), "partition": rows["partition"].astype("int32"),
        "offset": rows["offset"].astype("int64"), "value": rows["value"], "producer": rows["producer"],
        "op_id": rows["op_id"], "t_invoke_ns": rows["t_invoke_ns"],
        "t_complete_ns": rows["t_complete_ns"].astype("int64"),
        "t_read_ns": pa.nulls(len(rows), pa.int64()),
        "classification": np.where(violation, "violation", "allowed"),
        "durability": np.where(violation, "guaranteed", "at_risk"),
        "reason": ["benchmark: a lost write drawn at random"] * len(rows),
    }, schema=ANOMALIES_SCHEMA)
    pq.write_table(table, run / "anomalies.parquet")
    counts = {k: 0 for k in ANOMALY_KINDS} | {"lost": len(rows)}
    outcome = sends["outcome"].value_counts()
    verdict = {
        "run_id": run.name, "valid": False, "anomalies": counts, "violations": {"lost": int(violation.sum())},
        "counts": {"sends": len(sends), **{k: int(outcome.get(k, 0)) for k in ("ok", "fail", "info")}},
        "unavailable": 0.0,
        "predicted": {"lost": "never", "duplicates": "never", "reordering": "never", "unavailable_windows": []},
        "observed": {"lost": len(rows), "lost_at_risk": int((~violation).sum()),
                     "lost_guaranteed": int(violation.sum()), "duplicate": 0, "nonmonotonic_send": 0,
                     "unavailable": 0.0},
        "model": {}, "meta": {"scenario": "benchmark", "seed": seed, "command": "python bench/report_bench.py"},
    }
    (run / "verdict.json").write_text(json.dumps(verdict))


def measure(sends: int, lost: int, loads: int, directory: Path) -> dict:
    run = directory / "bench-run"
    t = time.monotonic()
    write_synthetic_run(run, sends=sends, partitions=6, seed=1, faults=True)
    add_checker_output(run, lost)
    generate_s = time.monotonic() - t
    t = time.monotonic()
    report = write_report(run)
    build_s = time.monotonic() - t
    baseline = directory / "plotly-only.html"  # the same inline plotly.js and nothing else: its parse time
    baseline.write_text("<!DOCTYPE html><html><body><script>" + plotly_js() + "</script><script>"
                        "document.body.dataset.renderedMs = String(performance.now())</script></body></html>")
    renders, walls, baselines = [], [], []
    with HeadlessChromium() as browser:
        for _ in range(loads):
            load = browser.open(report.as_uri(), "document.body.dataset.renderedMs")
            renders.append(float(browser.evaluate("document.body.dataset.renderedMs")) / 1000)
            walls.append(load.load_ms / 1000)
            assert not load.console_errors and not load.network_requests(), (load.console_errors, load.requests)
            browser.open(baseline.as_uri(), "document.body.dataset.renderedMs")
            baselines.append(float(browser.evaluate("document.body.dataset.renderedMs")) / 1000)
    return {"sends": sends, "lost": lost, "generate_s": generate_s, "build_s": build_s,
            "size_mb": report.stat().st_size / 1e6, "render_s": renders, "wall_s": walls,
            "plotly_only_s": baselines,
            "loadavg": os.getloadavg()[0], "report": str(report)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sends", type=int, default=1_000_000)
    parser.add_argument("--lost", type=int, default=20_000)
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the run here and keep it (default: a temporary dir)")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        result = measure(args.sends, args.lost, args.loads, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="report-bench-") as tmp:
            result = measure(args.sends, args.lost, args.loads, Path(tmp))
    render = statistics.median(result["render_s"])
    print(f"history: {result['sends']:,} sends, {result['lost']:,} lost-write anomalies "
          f"(generated in {result['generate_s']:.1f} s)")
    print(f"report.html: {result['size_mb']:.2f} MB (target < {SIZE_TARGET_MB} MB), built in {result['build_s']:.1f} s")
    print(f"render in headless chromium: median {render:.2f} s (target < {RENDER_TARGET_S} s); "
          f"each load: {', '.join(f'{r:.2f}' for r in result['render_s'])} s (first is cold)")
    print(f"of which plotly.js alone (a page with only the inline bundle): median "
          f"{statistics.median(result['plotly_only_s']):.2f} s")
    print(f"load average during the run: {result['loadavg']:.1f} on {os.cpu_count()} cores")
    if args.keep:
        print(f"kept: {result['report']}")
    return 0 if result["size_mb"] < SIZE_TARGET_MB and render < RENDER_TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
