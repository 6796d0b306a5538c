"""consumer-pause without a cluster: it freezes a seeded member through the processes' pause/resume (the eos
workload's processors offer them), records a consumer_pause event and heals by resuming it; members that cannot be
paused (a subscribe-mode group) are refused with a cause and a remedy."""
import pytest

from kafka_chaos.nemesis import registry
from kafka_chaos.nemesis.base import FaultError
from kafka_chaos.nemesis.control import Nemesis
from kafka_chaos.nemesis.events import EventLog
from kafka_chaos.nemesis.registry import FaultArgs


class Processors:
    def __init__(self, names):
        self.alive, self.calls = list(names), []

    def killable(self):
        return list(self.alive)

    def kill(self, name):
        raise AssertionError("a pause never kills")

    def restart(self, name):
        raise AssertionError("a pause never restarts")

    def pause(self, name):
        self.calls.append(("pause", name))
        return 4242

    def resume(self, name):
        self.calls.append(("resume", name))


def test_pauses_a_seeded_processor_and_heals_by_resuming_it():
    events, procs = EventLog(), Processors(["e0", "e1", "e2"])
    nemesis = Nemesis(cluster=None, record=events, consumers=procs)
    fault = nemesis.start(registry.build("consumer-pause", FaultArgs(seed=3)))
    (victim,) = [n for kind, n in procs.calls]
    assert events[0].details == events[0].details | {"effect": "consumer_pause", "signal": "SIGSTOP",
                                                     "consumer": victim, "pid": 4242}
    nemesis.heal(fault)
    assert procs.calls == [("pause", victim), ("resume", victim)]
    assert [e.action for e in events] == ["start", "heal"]


def test_refused_for_members_that_cannot_be_paused():
    class GroupMembers:
        def killable(self):
            return ["c0"]

    with pytest.raises(FaultError) as e:
        Nemesis(None, consumers=GroupMembers()).start(registry.build("consumer-pause"))
    assert "--workload eos" in e.value.remedy
