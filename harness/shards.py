"""`pytest --chaos-shard K/N`: the K-th of N deterministic shards of the chaos tests, so a CI job matrix can fan the
suite out and one job can be reproduced locally with the same flag.

Assignment: the selected chaos tests' ids, ordered by a hash of the id, dealt round-robin. Stable (an id's place
depends on the id, not on collection order or the machine), balanced (shard sizes differ by at most one), and
the shards partition the set. Tests not marked chaos are left alone.
"""
from __future__ import annotations

import argparse
import hashlib
import re
from typing import Iterable

import pytest


def parse_shard(text: str) -> tuple[int, int]:
    """'3/14' -> (3, 14); 1 <= K <= N. argparse.ArgumentTypeError (a pytest usage error) otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not (1 <= int(m.group(1)) <= int(m.group(2))):
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N with 1 <= K <= N (e.g. 3/14)")
    return int(m.group(1)), int(m.group(2))


def shard_ids(ids: Iterable[str], k: int, n: int) -> set[str]:
    """The ids in shard k of n (1-based)."""
    ordered = sorted(set(ids), key=lambda i: (hashlib.sha256(i.encode()).hexdigest(), i))
    return set(ordered[k - 1::n])


class ShardSelection:
    """Registered by the plugin when --chaos-shard is given; runs after the quick/full selection."""

    def __init__(self, k: int, n: int):
        self.k, self.n = k, n

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        chaos = [item.nodeid for item in items if item.get_closest_marker("chaos")]
        mine = shard_ids(chaos, self.k, self.n)
        drop = [item for item in items if item.get_closest_marker("chaos") and item.nodeid not in mine]
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = [item for item in items if not (item.get_closest_marker("chaos") and item.nodeid not in mine)]

    def pytest_report_header(self, config):
        return f"kafka-chaos: chaos shard {self.k}/{self.n}"
