"""Starting the workload waits (base.waiting) for every worker's ready event: a worker that exits first is named
with its exit code at once, a slow one after the timeout; either way the workload is aborted."""
import multiprocessing
import time
import types

import pytest

from kafka_chaos.workloads.run import WorkerFailed, Workload


def _ready_after(event, delay):
    time.sleep(delay)
    event.set()
    time.sleep(0.5)


def _exit_with(code):
    raise SystemExit(code)


def _spawn(target, *args, name):
    ctx = multiprocessing.get_context("spawn")
    event = ctx.Event()
    proc = ctx.Process(target=target, args=(event, *args) if target is _ready_after else args, name=name)
    proc.start()
    return event, proc


def _owner():
    owner = types.SimpleNamespace(aborted=0)
    owner._abort = lambda: setattr(owner, "aborted", owner.aborted + 1)
    return owner


def test_workers_that_become_ready_are_waited_for():
    ready = [_spawn(_ready_after, 0.2, name="producer-a"), _spawn(_ready_after, 0.6, name="consumer-c0")]
    owner = _owner()
    Workload._wait_started(owner, ready, timeout_s=30)
    assert all(e.is_set() for e, _ in ready) and owner.aborted == 0
    for _, p in ready:
        p.join(5)


def test_a_worker_that_exits_is_named_at_once_with_its_exit_code():
    ready = [_spawn(_ready_after, 0.1, name="producer-a"), _spawn(_exit_with, 3, name="consumer-c0")]
    owner = _owner()
    t0 = time.monotonic()
    with pytest.raises(WorkerFailed) as e:
        Workload._wait_started(owner, ready, timeout_s=60)
    assert time.monotonic() - t0 < 20
    assert "consumer-c0 did not start (exit code 3)" in e.value.cause and owner.aborted == 1
    for _, p in ready:
        p.join(5)


def test_a_slow_worker_times_out():
    ready = [_spawn(_ready_after, 5, name="producer-slow")]
    owner = _owner()
    with pytest.raises(WorkerFailed) as e:
        Workload._wait_started(owner, ready, timeout_s=0.5)
    assert "did not start within 0.5 s: producer-slow" in e.value.cause
    assert owner.aborted == 1
    ready[0][1].join(10)
