"""An interrupted run leaves nothing behind: no container, no network, no worker process; and its history is
still readable (Ctrl-C finishes it; after kill -9, `history repair` does)."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import docker
from kafka_chaos.cluster.kafka_cluster import LABEL
from tests.interrupt import like_a_terminal

pytestmark = [pytest.mark.chaos, pytest.mark.chaos_quick]
ROOT = Path(__file__).resolve().parents[2]


def ours() -> set[str]:
    client = docker.from_env()
    return ({c.name for c in client.containers.list(all=True, ignore_removed=True, filters={"label": LABEL})}
            | {n.name for n in client.networks.list(filters={"label": LABEL})})


def start_run(results: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kafka_chaos.harness.cli", "run", "leader-kill", "--duration", "120", "--seed", "3",
         "--results", str(results), "--rate", "500"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        preexec_fn=like_a_terminal)


def wait_for_faults_phase(proc: subprocess.Popen, timeout: float = 240) -> list[str]:
    """Read the run's log until its workload has run a few seconds (or it exits)."""
    lines, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if "[workload]" in line and "ok 0 " not in line:
            return lines
    raise AssertionError("the run never reached its workload:\n" + "".join(lines[-30:]))


def wait_until_clean(before: set[str], timeout: float = 60) -> set[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and ours() - before:
        time.sleep(1)
    return ours() - before


def test_ctrl_c_heals_removes_the_cluster_and_keeps_the_history(tmp_path):
    before = ours()
    proc = start_run(tmp_path)
    wait_for_faults_phase(proc)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode != 0
    assert wait_until_clean(before) == set(), out[-3000:]
    run_dir = next(tmp_path.iterdir())
    assert (run_dir / "history" / "sends.parquet").exists(), out[-3000:]


def test_kill_9_of_the_run_leaves_no_container_and_a_repairable_history(tmp_path):
    before = ours()
    proc = start_run(tmp_path)
    wait_for_faults_phase(proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert wait_until_clean(before) == set(), "the watchdog did not remove the killed run's cluster"
    run_dir = next(tmp_path.iterdir())
    repaired = subprocess.run([sys.executable, "-m", "kafka_chaos.harness.cli", "history", "repair", str(run_dir)],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert (run_dir / "history" / "sends.parquet").exists()
