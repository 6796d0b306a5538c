"""pid_alive: a running process is alive; an exited one is not, whether a zombie, reaped, or reaped while we look."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

from kafka_chaos.base.processes import pid_alive


def test_a_running_process_is_alive_and_a_killed_one_is_not_even_before_it_is_reaped():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert pid_alive(p.pid)
        os.kill(p.pid, signal.SIGKILL)
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)   # exited, still a zombie: not reaped yet
        assert not pid_alive(p.pid)
    finally:
        p.wait()
    assert not pid_alive(p.pid)                                # reaped


def test_a_process_reaped_while_it_is_being_looked_at_counts_as_gone_without_an_error():
    """The suite's power-loss test once failed with ProcessLookupError from reading /proc/<pid>/stat: another
    thread reaped the killed lazyfs process between the open and the read. Race it many times on purpose."""
    errors: list[BaseException] = []
    for _ in range(40):
        p = subprocess.Popen([sys.executable, "-c", "pass"])
        stop = threading.Event()

        def look(pid=p.pid):
            while not stop.is_set():
                try:
                    pid_alive(pid)
                except BaseException as e:                    # noqa: BLE001 (the point of the test)
                    errors.append(e)
                    return

        watchers = [threading.Thread(target=look) for _ in range(2)]
        for w in watchers:
            w.start()
        p.wait()
        stop.set()
        for w in watchers:
            w.join()
        assert not pid_alive(p.pid)
    assert errors == []


def test_the_harness_itself_is_alive_and_a_pid_that_never_was_is_not():
    assert pid_alive(os.getpid())
    assert not pid_alive(2**22 + 1)                            # above the kernel's pid_max limit
