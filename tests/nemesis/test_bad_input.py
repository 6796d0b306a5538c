"""Bad input fails with a clear UsageError before anything in the cluster is touched."""
from __future__ import annotations

import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.nemesis import registry
from kafka_chaos.nemesis.registry import FaultArgs
from tests.nemesis.probes import assert_no_rules_of_ours


def test_unknown_fault_names_the_known_ones():
    with pytest.raises(UsageError, match="unknown fault 'nuke'") as e:
        registry.build("nuke")
    assert "leader-isolate" in e.value.remedy


def test_a_bridge_needs_three_nodes():
    with pytest.raises(UsageError, match="at least 3 nodes"):
        registry.build("bridge", FaultArgs(targets=(1, 2)))


def test_one_way_needs_exactly_two_nodes():
    with pytest.raises(UsageError, match="exactly two nodes"):
        registry.build("one-way", FaultArgs(targets=(1, 2, 3)))


def test_faults_that_pick_their_own_target_refuse_one():
    with pytest.raises(UsageError, match="takes no --target"):
        registry.build("leader-kill", FaultArgs(targets=(1,)))


def test_loss_probability_must_be_a_probability():
    with pytest.raises(UsageError, match="probability"):
        registry.build("loss", FaultArgs(probability=1.5))


def test_every_fault_has_a_one_line_description():
    for t in registry.REGISTRY.values():
        assert t.description and "\n" not in t.description, t.name


@pytest.mark.cluster
@pytest.mark.parametrize("name, args, message", [
    ("kill", FaultArgs(targets=(7,)), "no node 7"),
    ("isolate", FaultArgs(targets=(1, 9)), "no node 9"),
    ("leader-isolate", FaultArgs(topic="no-such-topic"), "no-such-topic"),
    ("leader-kill", FaultArgs(topic="no-such-topic"), "no-such-topic"),
    ("loss", FaultArgs(targets=(1,), peers=(42,)), "no node 42"),
])
def test_a_target_that_does_not_exist_fails_before_anything_is_touched(cluster, nem, events, name, args, message):
    with pytest.raises(UsageError, match=message):
        nem.start(registry.build(name, args))
    assert events == [] and nem.active == []
    assert_no_rules_of_ours(cluster)


@pytest.mark.parametrize("old, new", sorted(registry.ALIASES.items()))
def test_old_verb_first_fault_names_resolve_to_todays_names(old, new, caplog):
    assert registry.build(old).name == new                      # the fault records today's name
    assert f"'{old}' is now called '{new}'" in caplog.text
    assert old in registry.aliases_of(new) and new in registry.REGISTRY


def test_faults_and_scenarios_name_the_target_first():
    from kafka_chaos.harness.scenarios import CATALOG

    verbs = ("kill", "stop", "pause", "isolate")
    for name in list(registry.REGISTRY) + list(CATALOG):
        assert not any(name.startswith(f"{v}-") for v in verbs), name


@pytest.mark.parametrize("changes, within, says", [(0, 30.0, "--changes 0"), (-2, 30.0, "--changes -2"),
                                                   (6, 0.0, "--within 0.0"), (6, -5.0, "--within -5.0")])
def test_leader_churn_needs_at_least_one_change_and_a_positive_window(changes, within, says):
    with pytest.raises(UsageError, match=says) as e:
        registry.build("leader-churn", FaultArgs(changes=changes, within_s=within))
    assert e.value.remedy.startswith("pass e.g.")


def test_a_plan_naming_leader_churn_with_bad_arguments_fails_when_it_is_written():
    from kafka_chaos.nemesis.schedule import spec

    with pytest.raises(UsageError, match="--changes 0"):
        spec("leader-churn", changes=0)
