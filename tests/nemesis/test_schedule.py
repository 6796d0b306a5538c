"""Schedules are pure plans: the same seed gives the same plan, without a cluster."""
import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.nemesis.schedule import FaultSpec, mix, once, sequence, spec, stagger


def stagger_of_three():
    return stagger(["leader-kill", "leader-isolate", spec("loss", probability=0.2)], mean_interval_s=10)


def test_same_seed_gives_the_same_schedule():
    s = mix(stagger_of_three(), once(5, "pause", 3))
    assert s.plan(42, 300) == s.plan(42, 300)
    assert len(s.plan(42, 300)) > 5


def test_another_seed_gives_another_schedule():
    s = stagger_of_three()
    assert s.plan(1, 300) != s.plan(2, 300)


def test_step_seeds_differ_so_random_targets_differ():
    seeds = [st.seed for st in stagger_of_three().plan(7, 300)]
    assert len(set(seeds)) == len(seeds)


def test_stagger_holds_one_fault_at_a_time_around_the_mean_interval():
    plan = stagger(["kill"], mean_interval_s=5, mean_duration_s=2).plan(3, 2000)
    for a, b in zip(plan, plan[1:]):
        assert a.heal_s <= b.start_s
    gaps = [b.start_s - a.heal_s for a, b in zip(plan, plan[1:])]
    assert 4 < sum(gaps) / len(gaps) < 6                # uniform(0, 10): mean 5
    holds = [s.heal_s - s.start_s for s in plan]
    assert all(1 <= h <= 3 for h in holds)


def test_once_is_capped_by_the_run():
    [step] = once(10, "pause", 30).plan(0, 25)
    assert (step.start_s, step.fault, step.heal_s) == (10, FaultSpec("pause"), 25)
    assert once(30, "pause", 5).plan(0, 25) == []


def test_sequence_plays_children_one_after_another():
    plan = sequence([once(1, "pause", 2), once(1, "kill", 2)], gap_s=1).plan(0, 60)
    assert [(s.fault.name, s.start_s, s.heal_s) for s in plan] == [("pause", 1, 3), ("kill", 5, 7)]


def test_mix_overlaps_faults():
    plan = mix(once(0, "pause", 10), once(2, "isolate", 3)).plan(0, 60)
    assert [s.fault.name for s in plan] == ["pause", "isolate"]
    assert plan[1].start_s < plan[0].heal_s


def test_unknown_fault_fails_when_the_schedule_is_built():
    with pytest.raises(UsageError, match="unknown fault 'nuke'"):
        once(0, "nuke", 1)
    with pytest.raises(UsageError):
        stagger([], mean_interval_s=1)
    with pytest.raises(UsageError):
        once(0, "pause", 0)
