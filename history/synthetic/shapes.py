"""Shapes of synthetic histories for the benchmark (bench/check_bench.py --shapes): how many anomalies a history has.

`clean` is stream.py's history as it always was: one leader kill, sends to the dead leader failing or timing out
for the session timeout, no lost write. `heavy` is anomaly-dense, uniformly over the whole run (the worst case
for any work that grows with the number of anomalous writes): 30% of the sends time out (`info`), a sixth of
those reached the log anyway (`recovered`, as stream.py's own timeouts), 1% of the acked writes are read by the
live consumers and then missing from the final drain (`lost` and `lost_after_read`), 0.1% of the writes were
appended twice (`duplicate`), and 0.05% of the acked positions were rewritten by a simulated unclean election:
the drain reads there the value of a timed-out send that the live consumers never saw (`divergent`, `lost`,
`lost_after_read`, `recovered` at once). `real` is a real run's history tiled up to the size (tile.py).

A shape acts on one chunk of stream.py before offsets are given (`outcomes`), and on its records after (`reads`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

INFO_TIMEOUT_NS = 30_000_000_000      # a timed-out send completes at its delivery timeout (stream.DELIVERY_TIMEOUT_MS)


@dataclass(frozen=True)
class Shape:
    """Shares of the sends (or acked writes) that each anomaly touches, on top of stream.py's clean history."""

    name: str
    info: float = 0.0          # of the ok sends: timed out instead (outcome info)
    info_landed: float = 1 / 6  # of those: the record reached the log anyway (recovered when read)
    lost: float = 0.0          # of the acked writes: read live, then absent from the final drain
    duplicate: float = 0.0     # of the landed ok writes: appended a second time (a retry)
    divergent: float = 0.0     # of the acked writes: the drain reads another (timed-out) value at its position


CLEAN = Shape("clean")
HEAVY = Shape("heavy", info=0.30, lost=0.01, duplicate=0.001, divergent=0.0005)
SHAPES = {s.name: s for s in (CLEAN, HEAVY)}


def outcomes(shape: Shape, rng: np.random.Generator, acks: np.ndarray, outcome: np.ndarray, error: np.ndarray,
             t_inv: np.ndarray, t_done: np.ndarray, landed: np.ndarray) -> np.ndarray:
    """Turn a share of the ok sends into timeouts (in place), and return the send indices appended twice."""
    if shape.info:
        u = rng.random(len(outcome))
        timed_out = (outcome == "ok") & (acks != "0") & (u < shape.info)
        outcome[timed_out] = "info"
        error[timed_out] = "_MSG_TIMED_OUT"
        t_done[timed_out] = t_inv[timed_out] + INFO_TIMEOUT_NS
        landed[timed_out] = u[timed_out] < shape.info * shape.info_landed
    if not shape.duplicate:
        return np.zeros(0, dtype=np.int64)
    return np.nonzero(landed & (outcome == "ok") & (rng.random(len(outcome)) < shape.duplicate))[0]


def reads(shape: Shape, rng: np.random.Generator, rec_send: np.ndarray, acked: np.ndarray, lost_candidates: np.ndarray,
          free_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which records the final drain lacks (mask over records) and, per record, the index of the send whose value
    the drain reads there instead (-1: its own). acked: per send, an ok write with acks 1/all; lost_candidates:
    per record, it is its send's first record; free_values: sends that timed out and never landed."""
    n = len(rec_send)
    missing = np.zeros(n, dtype=bool)
    replaced = np.full(n, -1, dtype=np.int64)
    eligible = acked[rec_send] & lost_candidates
    if shape.lost:
        missing = eligible & (rng.random(n) < shape.lost)
    if shape.divergent and len(free_values):
        pick = np.nonzero(eligible & ~missing & (rng.random(n) < shape.divergent))[0][:len(free_values)]
        replaced[pick] = free_values[:len(pick)]
    return missing, replaced
