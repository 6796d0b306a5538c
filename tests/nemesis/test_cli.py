"""`kafka-chaos nemesis FAULT | heal | list` against the running test cluster."""
from __future__ import annotations

import json

import pytest

from kafka_chaos.harness.cli import main
from kafka_chaos.nemesis import netrules, registry
from tests.nemesis.probes import assert_no_rules_of_ours


def test_list_describes_every_fault_on_one_line(capsys):
    assert main(["nemesis", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == registry.names()
    leader_kill = next(line for line in lines if line.startswith("leader-kill "))
    assert leader_kill.endswith("(alias: kill-leader)")          # the old verb-first name, still accepted


def test_unknown_fault_exits_2_with_the_remedy(capsys):
    assert main(["nemesis", "nuke", "--name", "whatever"]) == 2
    err = capsys.readouterr().err
    assert "unknown fault 'nuke'" in err and "kafka-chaos nemesis list" in err


def test_impossible_shape_exits_2_before_attaching(capsys):
    assert main(["nemesis", "bridge", "--target", "1,2", "--name", "no-such-cluster"]) == 2
    assert "at least 3 nodes" in capsys.readouterr().err


@pytest.mark.cluster
def test_fault_with_duration_applies_then_heals(cluster, capsys):
    assert main(["nemesis", "pause", "--target", "2", "--duration", "1", "--name", cluster.config.name]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["action"], r["fault"], r["nodes"]) for r in rows] == [("start", "pause", [2]), ("heal", "pause", [2])]
    assert json.loads(rows[0]["details"])["effect"] == "pause"
    assert cluster.node(2).state() == "running"


@pytest.mark.cluster
def test_fault_without_duration_stays_until_nemesis_heal(cluster, capsys):
    name = cluster.config.name
    assert main(["nemesis", "isolate", "--target", "3", "--name", name]) == 0
    assert main(["nemesis", "pause", "--target", "1", "--name", name]) == 0
    assert netrules.rules_of_ours(cluster.node(3)) and cluster.node(1).state() == "paused"
    assert main(["nemesis", "heal", "--name", name]) == 0
    assert "no rule of ours left" in capsys.readouterr().out
    assert_no_rules_of_ours(cluster)


@pytest.mark.parametrize("flag, value", [("--changes", "0"), ("--within", "0"), ("--within", "-3")])
def test_bad_churn_arguments_exit_2_before_attaching(capsys, flag, value):
    assert main(["nemesis", "leader-churn", flag, value, "--name", "no-such-cluster"]) == 2
    err = capsys.readouterr().err
    assert f"{flag} {value}" in err.replace(".0", "") and "remedy" in err
