"""Benchmark (not a test): `kafka-chaos check` on Spark against the single-process pandas implementation.

For each size it writes a synthetic results directory (once; reused when present), then times
  spark:  `kafka-chaos check DIR --force` in a fresh process, end to end, Spark start included;
  pandas: `kafka-chaos check DIR --force --engine pandas` in a fresh process (the same definitions, vectorised
          in one process);
and prints both wall times, their ratio and each process's peak RSS (children's ru_maxrss).
Targets on a 2-core machine: 10M sends within 2x the pandas time; 100M sends without exhausting 24 GiB.

    python bench/check_bench.py                  # 1M and 10M
    python bench/check_bench.py --sizes 1e6      # one size
    python bench/check_bench.py --sizes 1e8 --skip-pandas
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path


def timed(cmd: list[str]) -> tuple[float, int, float]:
    """Wall seconds, exit code and peak RSS (GiB) of a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    rc = subprocess.run(cmd).returncode
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, rc, max(peak, before) / 2**20


def ensure_run(root: Path, sends: int) -> Path:
    from checkers.synthetic import write_synthetic_run
    run = root / f"bench-{sends}"
    if not (run / "meta.json").exists():
        t = time.perf_counter()
        write_synthetic_run(run, sends=sends, partitions=3, seed=0, faults=True)
        print(f"generated {sends:,} sends in {time.perf_counter() - t:.1f} s -> {run}", flush=True)
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["1e6", "1e7"], help="numbers of sends")
    ap.add_argument("--root", default="/tmp/kafka-chaos-bench", help="where the synthetic runs are written")
    ap.add_argument("--skip-pandas", action="store_true", help="time only Spark (e.g. 100M sends)")
    args = ap.parse_args()
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    cli = [sys.executable, "-m", "harness.cli"]
    results = []
    for size in (int(float(s)) for s in args.sizes):
        run = ensure_run(root, size)
        spark_s, rc_s, rss_s = timed(cli + ["check", str(run), "--force"])
        row = {"sends": size, "spark_s": round(spark_s, 1), "spark_exit": rc_s, "spark_peak_rss_gib": round(rss_s, 2)}
        if not args.skip_pandas:
            pandas_s, rc_p, rss_p = timed(cli + ["check", str(run), "--force", "--engine", "pandas"])
            row.update(pandas_s=round(pandas_s, 1), pandas_exit=rc_p, pandas_peak_rss_gib=round(rss_p, 2),
                       ratio_spark_over_pandas=round(spark_s / pandas_s, 2))
        print(json.dumps(row), flush=True)
        results.append(row)
    print("\nsends        spark s   pandas s   ratio")
    for r in results:
        print(f"{r['sends']:>11,}  {r['spark_s']:>8}  {r.get('pandas_s', '-'):>9}  {r.get('ratio_spark_over_pandas', '-'):>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
