"""A schedule plays on time, and heal-all runs on every exit path: normal end, exception, SIGINT, SIGTERM.
Afterwards every node runs unpaused and no rule of ours remains."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from kafka_chaos.base.waiting import wait_until
from kafka_chaos.nemesis.schedule import ScheduleRunner, mix, once, sequence, spec
from tests.interrupt import like_a_terminal
from tests.nemesis.probes import assert_no_rules_of_ours

pytestmark = pytest.mark.cluster


def pause_and_isolate(hold_s: float):
    return mix(once(0, spec("pause", targets=[2]), hold_s), once(0.5, spec("isolate", targets=[3]), hold_s))


def test_a_plan_plays_on_time_and_ends_healed(cluster, nem, events):
    plan = sequence([once(0, spec("pause", targets=[2]), 1.5), once(0, spec("isolate", targets=[3]), 1.5)]).plan(1, 10)
    t0 = time.time_ns()
    ScheduleRunner(nem, plan).run()
    assert [(e.action, e.fault) for e in events] == [("start", "pause"), ("heal", "pause"),
                                                     ("start", "isolate"), ("heal", "isolate")]
    offsets = [(e.t_ns - t0) / 1e9 for e in events]
    planned = [0, 1.5, 1.5, 3.0]          # an event is recorded once its docker operations are done
    assert all(p <= o < p + 3 for p, o in zip(planned, offsets)), offsets
    assert_no_rules_of_ours(cluster)


def test_a_step_that_cannot_start_is_skipped_and_the_run_goes_on(cluster, nem, events):
    plan = sequence([once(0, spec("leader-kill", topic="no-such-topic"), 1),
                     once(0, spec("pause", targets=[1]), 1)]).plan(0, 10)
    runner = ScheduleRunner(nem, plan)
    runner.run()
    assert [s.fault.name for s, _ in runner.failures] == ["leader-kill"]
    assert [(e.action, e.fault) for e in events] == [("start", "pause"), ("heal", "pause")]


def test_heal_all_runs_when_the_caller_raises(cluster, nem, events):
    with pytest.raises(RuntimeError, match="workload crashed"):
        with ScheduleRunner(nem, pause_and_isolate(60).plan(0, 120)):
            wait_until(lambda: len(events) == 2, 20, "faults did not start")
            assert cluster.node(2).state() == "paused"
            raise RuntimeError("workload crashed")
    assert sorted((e.action, e.fault) for e in events[2:]) == [("heal", "isolate"), ("heal", "pause")]
    assert_no_rules_of_ours(cluster)


SCRIPT = """
import json, sys
from kafka_chaos.cluster.kafka_cluster import KafkaCluster
from kafka_chaos.nemesis.schedule import mix, once, run_schedule, spec
cluster = KafkaCluster.attach(sys.argv[1])
schedule = mix(once(0, spec("pause", targets=[2]), 120), once(0.5, spec("isolate", targets=[3]), 120))
run_schedule(cluster, schedule, seed=0, duration_s=120,
             record=lambda e: print(json.dumps(e.row()), flush=True))
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_heal_all_runs_when_the_process_gets_a_signal(cluster, sig):
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, cluster.config.name], stdout=subprocess.PIPE, text=True,
                            preexec_fn=like_a_terminal)
    try:
        starts = [json.loads(proc.stdout.readline()) for _ in range(2)]
        assert [s["action"] for s in starts] == ["start", "start"]
        assert cluster.node(2).state() == "paused"
        proc.send_signal(sig)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    heals = [json.loads(line) for line in rest.splitlines()]
    assert sorted(h["fault"] for h in heals if h["action"] == "heal") == ["isolate", "pause"]
    assert_no_rules_of_ours(cluster)
