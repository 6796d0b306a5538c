"""What every workload process shares: how it is started (spawn) and when it must stop.

librdkafka is not fork-safe, so workers are spawned, never forked. A worker ignores SIGINT (Ctrl-C reaches the
whole process group; the harness decides how to stop) and stops by itself when its parent dies, so a killed
harness leaves finished journals instead of orphans producing forever.
"""
from __future__ import annotations

import multiprocessing
import os
import signal


def spawn_context():
    return multiprocessing.get_context("spawn")


def detach_from_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def should_stop(stop_event, parent_pid: int) -> bool:
    """Asked to stop, or orphaned (the harness that spawned us is gone)."""
    return stop_event.is_set() or os.getppid() != parent_pid
