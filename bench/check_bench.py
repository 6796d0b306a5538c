"""Benchmark (not a test): `kafka-chaos check` on Spark against the single-process pandas implementation.

For each size it writes a synthetic results directory (once; reused when present), then times
  spark:  `kafka-chaos check DIR --force` in a fresh process, end to end, Spark start included;
  pandas: `kafka-chaos check DIR --force --engine pandas` in a fresh process (the same definitions, vectorised
          in one process);
and prints both wall times, their ratio, and each run's peak memory: the largest sum of the resident set sizes of
the checker process and all its descendants (for Spark: Python plus the JVM it launches), sampled from /proc
every 100 ms. ru_maxrss alone would miss the JVM, which is a grandchild.
Targets on a 2-core machine: 10M sends within 2x the pandas time; 100M sends without exhausting 24 GiB.

    python bench/check_bench.py                  # 1M and 10M
    python bench/check_bench.py --sizes 1e6      # one size
    python bench/check_bench.py --sizes 1e8 --skip-pandas
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def _children(pid: int) -> list[int]:
    kids = []
    task_dir = Path(f"/proc/{pid}/task")
    for task in task_dir.iterdir() if task_dir.exists() else ():
        try:
            kids += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return kids


def tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and all its descendants (0 for processes that are gone)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            total += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
        todo += _children(p)
    return total


def load_average() -> float:
    return os.getloadavg()[0]


def timed(cmd: list[str]) -> tuple[float, int, float]:
    """Wall seconds, exit code and peak RSS (GiB) of a command and everything it starts."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd)
    peak = 0
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(proc.pid))
            done.wait(0.1)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    rc = proc.wait()
    wall = time.perf_counter() - t
    done.set()
    sampler.join()
    return wall, rc, peak / 2**30


def ensure_run(root: Path, sends: int) -> Path:
    from history.synthetic import write_synthetic_run
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
        row = {"sends": size, "load_before": round(load_average(), 1)}
        spark_s, rc_s, rss_s = timed(cli + ["check", str(run), "--force"])
        row.update(spark_s=round(spark_s, 1), spark_exit=rc_s, spark_peak_rss_gib=round(rss_s, 2))
        if not args.skip_pandas:
            pandas_s, rc_p, rss_p = timed(cli + ["check", str(run), "--force", "--engine", "pandas"])
            row.update(pandas_s=round(pandas_s, 1), pandas_exit=rc_p, pandas_peak_rss_gib=round(rss_p, 2),
                       ratio_spark_over_pandas=round(spark_s / pandas_s, 2))
        row["load_after"] = round(load_average(), 1)
        print(json.dumps(row), flush=True)
        results.append(row)
    print("\n      sends   spark s  pandas s   ratio  spark GiB  pandas GiB  load before/after")
    for r in results:
        print(f"{r['sends']:>11,}  {r['spark_s']:>8}  {r.get('pandas_s', '-'):>8}  "
              f"{r.get('ratio_spark_over_pandas', '-'):>6}  {r['spark_peak_rss_gib']:>9}  "
              f"{r.get('pandas_peak_rss_gib', '-'):>10}  {r['load_before']}/{r['load_after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
