"""numpy helpers shared across layers."""
from __future__ import annotations

import numpy as np


def filled(n: int, value) -> np.ndarray:
    """An object array of `n` references to one `value`. np.full(n, "text", dtype=object) goes through a
    fixed-width unicode array and builds a new string per element: 30 ms for a 7-letter word over 661,785
    instances, 90 ms for a 150-character reason, and that much more memory."""
    out = np.empty(n, dtype=object)
    out.fill(value)
    return out
