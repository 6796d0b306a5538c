"""A killed harness or worker leaves a history that repair turns into Parquet holding every send counted."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from kafka_chaos.base.waiting import wait_until
from kafka_chaos.history.journal import producer_paths, read_progress
from kafka_chaos.history.writer import repair
from tests.interrupt import like_a_terminal

pytestmark = pytest.mark.cluster

HARNESS = Path(__file__).with_name("crash_harness.py")


def start_harness(cluster, topic, run_dir) -> tuple[subprocess.Popen, dict[str, int]]:
    proc = subprocess.Popen([sys.executable, str(HARNESS), cluster.config.name, topic, str(run_dir)],
                            stdout=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=like_a_terminal)
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        pytest.fail(f"the stand-in harness died before starting (exit {proc.wait()})")
    return proc, json.loads(line)["pids"]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def wait_for_progress(run_dir: Path, processes: int, at_least: int) -> None:
    def counted():
        progress = [read_progress(producer_paths(run_dir / "history" / "journal", i)["progress"])
                    for i in range(processes)]
        return all(p and p["invoked"] >= at_least for p in progress)
    wait_until(counted, 60, f"producers did not reach {at_least} sends each")


def wait_for_live_reads(run_dir: Path) -> None:
    journal = run_dir / "history" / "journal"
    wait_until(lambda: any(p.stat().st_size > 0 for p in journal.glob("reads-*.tsv")), 60,
               "the live consumer journaled no read")


def sends_of(run_dir: Path, process: int):
    sends = pq.read_table(run_dir / "history" / "sends.parquet")
    return sends.filter(pc.equal(sends["process"], process))


def test_kill_9_of_the_harness_loses_no_counted_send(cluster, topic, tmp_path):
    run_dir = tmp_path / "run"
    proc, pids = start_harness(cluster, topic, run_dir)
    wait_for_progress(run_dir, 2, at_least=2000)
    wait_for_live_reads(run_dir)               # on a busy machine the consumer may trail the producers
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # orphaned workers notice, settle their sends (flush, purge, flush) and exit
    wait_until(lambda: not any(alive(p) for p in pids.values()), 60, f"workers {pids} outlived the harness")
    assert not (run_dir / "history" / "sends.parquet").exists()

    summary = repair(run_dir)

    assert summary.sends > 0 and summary.without_outcome == 0
    for process in (0, 1):
        counted = read_progress(producer_paths(run_dir / "history" / "journal", process)["progress"])
        mine = sends_of(run_dir, process)
        values = mine["value"].to_pylist()
        assert len(values) == len(set(values)) == counted["invoked"]
        assert set(values) == {f"{process}-{i}" for i in range(counted["invoked"])}
        outcomes = {d["values"]: d["counts"] for d in pc.value_counts(mine["outcome"]).to_pylist()}
        assert (outcomes.get("ok", 0), outcomes.get("fail", 0), outcomes.get("info", 0)) == (
            counted["ok"], counted["fail"], counted["info"])
    reads = pq.read_table(run_dir / "history" / "reads.parquet")
    assert reads.num_rows > 0 and set(reads["phase"].to_pylist()) == {"live"}
    assert pq.read_table(run_dir / "history" / "cluster.parquet").num_rows > 0
    assert json.loads((run_dir / "meta.json").read_text())["producers"][0]["name"] == "idem"


def test_kill_9_of_a_worker_leaves_its_sends_readable_and_unreported_ones_info(cluster, topic, tmp_path):
    run_dir = tmp_path / "run"
    proc, pids = start_harness(cluster, topic, run_dir)
    try:
        wait_for_progress(run_dir, 2, at_least=1000)
        before = read_progress(producer_paths(run_dir / "history" / "journal", 0)["progress"])
        os.kill(pids["producer-idem"], signal.SIGKILL)
        wait_until(lambda: not alive(pids["producer-idem"]), 10, "the producer did not die")
        summary = repair(run_dir)       # while the rest of the run goes on
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        wait_until(lambda: not any(alive(p) for p in pids.values()), 60, "workers outlived the harness")

    mine = sends_of(run_dir, 0)
    values = mine["value"].to_pylist()
    assert len(values) == len(set(values)) >= before["invoked"]
    assert set(values) == {f"0-{i}" for i in range(len(values))}      # a prefix: nothing skipped
    unreported = mine.filter(mine["t_complete_ns"].is_null())
    assert set(unreported["outcome"].to_pylist()) <= {"info"}
    assert summary.without_outcome == unreported.num_rows + sends_of(run_dir, 1)["t_complete_ns"].null_count


def test_ctrl_c_of_the_harness_finishes_the_history(cluster, topic, tmp_path):
    """SIGINT reaches the whole process group: workers ignore it, and the harness stops them in order."""
    run_dir = tmp_path / "run"
    proc, pids = start_harness(cluster, topic, run_dir)
    wait_for_progress(run_dir, 2, at_least=1000)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=120)
    finally:                                   # a harness that did not stop must not outlive the test
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0 and "finalized" in out
    for process in (0, 1):
        counted = read_progress(producer_paths(run_dir / "history" / "journal", process)["progress"])
        mine = sends_of(run_dir, process)
        assert mine.num_rows == counted["invoked"] and mine["t_complete_ns"].null_count == 0
