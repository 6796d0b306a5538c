"""The power-loss pair of docs/findings.md: `power-loss-all` with acks=all and min.insync.replicas=2, once under Kafka's
default flush settings and once with --flush-every-write, same seed; prints each verdict, what was lost, what the
model predicted, and the acked writes per second before the power loss (the throughput cost of fsync per write).

    .venv/bin/python bench/power_loss_pair.py [--duration 90] [--rate 0] [--seed 14] [--results results/power-loss-pair]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
from pathlib import Path

import pandas as pd

from kafka_chaos.harness.cluster_options import ClusterChoice
from kafka_chaos.harness.runner import RunOptions, run, summary_lines


def figures(run_dir: Path) -> dict:
    """Acked writes, acked writes/s until the power loss began, what was lost and what the model said."""
    sends = pd.read_parquet(run_dir / "history" / "sends.parquet")
    faults = pd.read_parquet(run_dir / "history" / "faults.parquet")
    meta = json.loads((run_dir / "meta.json").read_text())
    verdict = json.loads((run_dir / "verdict.json").read_text())
    starts = faults[faults.action == "start"]
    cut = int(starts.t_ns.min()) if len(starts) else int(sends.t_complete_ns.max())
    ok = sends[sends.outcome == "ok"]
    before = ok[ok.t_complete_ns < cut]
    seconds = (cut - meta["start_ns"]) / 1e9
    return {"run": run_dir.name, "valid": verdict.get("valid"), "status": verdict.get("status"),
            "acked": int(len(ok)), "acked_before_power_loss": int(len(before)),
            "acked_per_s_before_power_loss": round(len(before) / seconds, 1) if seconds > 0 else None,
            "lost": (verdict.get("anomalies") or {}).get("lost"),
            "lost_after_read": (verdict.get("anomalies") or {}).get("lost_after_read"),
            "violations": verdict.get("violations"), "model_acked_loss": (verdict.get("predicted") or {}).get("lost"),
            "model_disagreements": len(verdict.get("model_disagreements") or []),
            "load_avg_1m_at_end": round(os.getloadavg()[0], 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=90.0)
    ap.add_argument("--rate", type=float, default=0.0, help="sends/s (0: as fast as possible)")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--results", type=Path, default=Path("results/power-loss-pair"))
    ap.add_argument("--engine", default="pandas")
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    rows = []
    for flush in (False, True):
        opts = RunOptions(scenario="power-loss-all", acks="all", min_isr=2, duration_s=a.duration,
                          rate=a.rate or None, seed=a.seed, results=a.results, live=False, engine=a.engine,
                          cluster=ClusterChoice(flush_every_write=True if flush else None))
        result = run(opts)
        print("\n".join(summary_lines(result)), flush=True)
        row = figures(result.run_dir) | {"flush_every_write": flush, "exit_code": result.exit_code,
                                         "command": opts.command()}
        rows.append(row)
        print(json.dumps(row), flush=True)
    (a.results / "pair.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
