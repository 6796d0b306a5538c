"""The consumer-kill fault without a cluster: it acts on the run's group members through the ConsumerProcesses seam
(here a recording stand-in for the workload's members), records a consumer_kill event and heals by starting the
replacement; outside a run, or with no member alive, it refuses with a cause and a remedy."""
import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.harness.run_options import RunOptions
from kafka_chaos.nemesis import registry
from kafka_chaos.nemesis.base import FaultError
from kafka_chaos.nemesis.control import Nemesis
from kafka_chaos.nemesis.events import EventLog
from kafka_chaos.nemesis.registry import FaultArgs


class Members:
    """What the harness hands the Nemesis: killable names, kill -> (pid, replacement), restart."""

    def __init__(self, names):
        self.alive, self.calls = list(names), []

    def killable(self):
        return list(self.alive)

    def kill(self, name):
        self.alive.remove(name)
        self.calls.append(("kill", name))
        return 1000 + len(self.calls), f"{name}-r1"

    def restart(self, name):
        self.calls.append(("restart", name))
        self.alive.append(f"{name}-r1")


def test_kills_a_seeded_member_and_heals_by_starting_its_replacement():
    events, members = EventLog(), Members(["c0", "c1", "c2"])
    nemesis = Nemesis(cluster=None, record=events, consumers=members)
    fault = nemesis.start(registry.build("consumer-kill", FaultArgs(seed=7)))
    (victim,) = [n for kind, n in members.calls if kind == "kill"]
    start = events[0]
    assert start.action == "start" and start.nodes == []
    assert start.details["effect"] == "consumer_kill" and start.details["consumer"] == victim
    assert start.details["replacement"] == f"{victim}-r1" and start.details["pid"] == 1001
    nemesis.heal(fault)
    assert members.calls == [("kill", victim), ("restart", victim)]
    assert [e.action for e in events] == ["start", "heal"] and events[1].details["consumer"] == victim
    # the same seed picks the same member again
    again = Members(["c0", "c1", "c2"])
    Nemesis(None, EventLog(), consumers=again).start(registry.build("consumer-kill", FaultArgs(seed=7)))
    assert again.calls == [("kill", victim)]


def test_refused_outside_a_run_and_when_no_member_is_alive():
    with pytest.raises(FaultError) as e:
        Nemesis(None).start(registry.build("consumer-kill"))
    assert "--consumer-mode subscribe" in e.value.remedy
    with pytest.raises(FaultError, match="no consumer-group member is alive"):
        Nemesis(None, consumers=Members([])).start(registry.build("consumer-kill"))
    with pytest.raises(UsageError, match="takes no --target"):
        registry.build("consumer-kill", FaultArgs(targets=(1,)))


def test_a_scenario_with_consumer_kill_needs_a_consumer_group():
    with pytest.raises(UsageError) as e:
        RunOptions("consumer-and-leader-kill", seed=1, duration_s=30).resolved()
    assert "--consumer-mode subscribe" in e.value.remedy
    opts = RunOptions("consumer-and-leader-kill", seed=1, duration_s=30, consumer_mode="subscribe").resolved()
    assert [(s.start_s, s.fault.name, s.heal_s) for s in opts.plan()] == [(6.0, "consumer-kill", 16.0),
                                                                            (9.0, "leader-kill", 16.0)]
