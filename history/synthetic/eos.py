"""A clean exactly-once history, as `--workload eos` would record it, for tests and the cycle-search timing.

`processors` processors each own partitions p with p % processors == k; each transaction j of processor k reads
`per_partition` records from each of its partitions (records j*b .. j*b+b-1), writes their outputs to the same
partitions (output offsets j*(b+1) .. : one slot per transaction left for its commit marker) and commits offset
(j+1)*b of each. Returns (txns, reads, eos_meta): txns with eos.parquet's columns, reads with reads.parquet's
(the final drain, and one live reader `c0` reading each output after its commit unless `live` is False).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from kafka_chaos.history.eos import input_value, output_value

T0 = 1_700_000_000_000_000_000
STEP_NS = 10_000


def eos_history(transactions: int = 60, partitions: int = 6, processors: int = 3, per_partition: int = 2,
                seed: int = 1, live: bool = True):
    k = np.arange(transactions) % processors            # transaction i is processor k's j-th
    j = np.arange(transactions) // processors
    owned = [[p for p in range(partitions) if p % processors == q] for q in range(processors)]
    b = per_partition
    reads_p, reads_o, writes_o, commits_p, commits_o = [], [], [], [], []
    for q, n in zip(k.tolist(), j.tolist()):
        parts = owned[q]
        reads_p.append([p for p in parts for _ in range(b)])
        reads_o.append([n * b + i for _ in parts for i in range(b)])
        writes_o.append([n * (b + 1) + i for _ in parts for i in range(b)])
        commits_p.append(list(parts))
        commits_o.append([(n + 1) * b] * len(parts))
    t_begin = T0 + j * STEP_NS + k
    txns = pd.DataFrame({
        "processor": [f"e{q}" for q in k.tolist()], "process": k.astype(np.int32), "txn": j.astype(np.int64),
        "outcome": "committed", "error": None, "read_partitions": reads_p, "read_offsets": reads_o,
        "write_partitions": reads_p, "write_offsets": writes_o, "commit_partitions": commits_p,
        "commit_offsets": commits_o, "t_begin_ns": t_begin, "t_commit_ns": t_begin + 5000,
        "t_end_ns": t_begin + 8000})
    ex = txns[["processor", "txn", "read_partitions", "read_offsets", "write_offsets", "t_end_ns"]].explode(
        ["read_partitions", "read_offsets", "write_offsets"])
    p, o = ex["read_partitions"].astype(np.int64).to_numpy(), ex["read_offsets"].astype(np.int64).to_numpy()
    values = [output_value(pp, oo, input_value(seed, pp, oo), proc, t)
              for pp, oo, proc, t in zip(p.tolist(), o.tolist(), ex["processor"].tolist(), ex["txn"].tolist())]
    final = pd.DataFrame({"consumer": "final", "seq": np.arange(len(p)), "phase": "final",
                          "partition": p.astype(np.int32), "offset": ex["write_offsets"].astype(np.int64).to_numpy(),
                          "value": values, "t_ns": T0 + (transactions + 10) * STEP_NS})
    frames = [final]
    if live:
        frames.append(final.assign(consumer="c0", phase="live",
                                   t_ns=ex["t_end_ns"].astype(np.int64).to_numpy() + 100))
    reads = pd.concat(frames, ignore_index=True)
    ends = {str(q): int((transactions // processors + (1 if q % processors < transactions % processors else 0)) * b)
            for q in range(partitions)}
    meta = {"input_topic": "chaos-in", "seed": seed, "processors": processors, "batch": b,
            "input_ends": ends, "committed": dict(ends), "transaction_timeout_ms": 20000}
    return txns, reads, meta
