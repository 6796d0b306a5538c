"""Time the exactly-once checker's dependency-graph search on a synthetic history of N transactions (default 1M).

    .venv/bin/python bench/eos_cycles.py [N]

Prints the time to build the history (not part of a check), the graph step of checkers/eos.py (edges from the
transactions and the final drain, then the strong components: what `check` spends on it), the strong-component
search alone on those integer edges, and the whole eos check; then the same search with one G0 cycle injected, which
it must find. The history: 6 partitions, 3 processors, each transaction reading and writing one record of each of
its processor's 2 partitions (history/synthetic/eos.py), no live reader.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from kafka_chaos.checkers.eos import EosCheck
from kafka_chaos.checkers.eos_graph import WW, find_cycles
from kafka_chaos.history.synthetic.eos import eos_history


def main(n: int) -> None:
    t = time.perf_counter()
    txns, reads, meta = eos_history(transactions=n, partitions=6, processors=3, per_partition=1, live=False)
    print(f"history: {n} transactions, {len(reads)} output reads, built in {time.perf_counter() - t:.1f} s")
    check = EosCheck(txns, reads, meta)
    t = time.perf_counter()
    live = (check.txns["outcome"] != "aborted").to_numpy()
    edges = np.concatenate(check._offset_edges(live) + [check._output_edges()], axis=1)
    built = time.perf_counter() - t
    t = time.perf_counter()
    found = find_cycles(len(txns), edges[0], edges[1], edges[2])
    scc = time.perf_counter() - t
    print(f"graph: {edges.shape[1]} edges built in {built:.2f} s; strong components in {scc:.2f} s; "
          f"{len(found)} cycles")
    t = time.perf_counter()
    rows = EosCheck(txns, reads, meta).run()
    print(f"whole eos check: {time.perf_counter() - t:.1f} s, {len(rows)} anomalies")
    a, b = n // 2, n // 2 + 3                      # one back edge: b's outputs before a's somewhere
    t = time.perf_counter()
    found = find_cycles(len(txns), np.append(edges[0], b), np.append(edges[1], a), np.append(edges[2], WW))
    print(f"with a G0 injected: strong components in {time.perf_counter() - t:.2f} s; found "
          f"{[(c['kind'], len(c['nodes'])) for c in found]}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
