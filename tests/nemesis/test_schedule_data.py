"""Fault plans as JSON: every catalog plan survives a write and a read; bad files fail with cause and remedy."""
import json

import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.harness.run_options import RunOptions
from kafka_chaos.harness.scenarios import CATALOG
from kafka_chaos.nemesis import schedule_data
from kafka_chaos.nemesis.schedule import Step, spec


@pytest.mark.parametrize("name", list(CATALOG))
def test_every_catalog_plan_round_trips(tmp_path, name):
    steps = CATALOG[name].plan(11, 120)
    path = schedule_data.write(tmp_path / "s.json", steps, name, 11, 120)
    back = schedule_data.read(path)
    assert list(back.steps) == steps
    assert (back.scenario, back.seed, back.duration_s) == (name, 11, 120.0)
    assert back.schedule.plan(999, 120) == steps            # a fixed plan: the seed given to plan() is not used


def test_args_hold_only_what_differs_from_the_defaults():
    step = Step(3.0, spec("loss", probability=0.5, targets=[2, 3]), 9.0, 42)
    d = schedule_data.step_to_dict(step)
    assert d == {"at_s": 3.0, "fault": "loss", "args": {"probability": 0.5, "targets": [2, 3]},
                 "heal_after_s": 6.0, "seed": 42}


def test_a_hand_written_file_is_deterministic_and_capped_by_the_run():
    raw = {"seed": 5, "steps": [{"at_s": 20, "fault": "kill-leader", "heal_after_s": 30},
                                {"at_s": 2, "fault": "pause", "heal_after_s": 3}]}
    a, b = schedule_data.from_dict(raw), schedule_data.from_dict(json.loads(json.dumps(raw)))
    assert a == b
    assert [s.fault.name for s in a.steps] == ["pause", "leader-kill"]      # sorted; the old spelling resolved
    plan = a.schedule.plan(0, 40)
    assert plan[1].heal_s == 40 and a.schedule.plan(0, 10) == [a.steps[0]]
    assert a.steps[0].seed != a.steps[1].seed


@pytest.mark.parametrize("raw,match", [
    ([], "JSON object"),
    ({"steps": {}}, "'steps' must be a list"),
    ({"steps": [{"at_s": 1, "fault": "nuke", "heal_after_s": 2}]}, "step 1: unknown fault 'nuke'"),
    ({"steps": [{"at_s": 1, "fault": "pause"}]}, r"step 1: missing key\(s\) \['heal_after_s'\]"),
    ({"steps": [{"at_s": 1, "fault": "pause", "heal_after_s": 2, "when": 3}]}, "unknown key"),
    ({"steps": [{"at_s": -1, "fault": "pause", "heal_after_s": 2}]}, "'at_s' must be >= 0"),
    ({"steps": [{"at_s": 1, "fault": "pause", "heal_after_s": 0}]}, "'heal_after_s' must be > 0"),
    ({"steps": [{"at_s": "1", "fault": "pause", "heal_after_s": 2}]}, "'at_s' must be a number"),
    ({"steps": [{"at_s": 1, "fault": "pause", "heal_after_s": 2, "args": {"force": 1}}]}, "unknown fault argument"),
    ({"steps": [{"at_s": 1, "fault": "pause", "heal_after_s": 2, "args": {"targets": "1,2"}}]}, "list of node ids"),
    ({"format": "other/2", "steps": []}, "format"),
])
def test_bad_files_name_the_step_and_the_key(raw, match):
    with pytest.raises(UsageError, match=match) as e:
        schedule_data.from_dict(raw)
    assert "docs/history.md" in e.value.remedy or "nemesis list" in e.value.remedy


def test_missing_or_broken_file(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        schedule_data.read(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(UsageError, match="not valid JSON"):
        schedule_data.read(tmp_path / "bad.json")


def test_run_schedule_replaces_the_scenarios_plan(tmp_path):
    f = schedule_data.write(tmp_path / "plan.json", [Step(4.0, spec("leader-kill", topic="chaos"), 9.0, 3)],
                            "cascade-kill", 7, 30)
    opts = RunOptions(scenario=None, schedule_file=f, seed=7).resolved()
    assert opts.scenario == "cascade-kill" and opts.duration_s == 30       # both from the file
    assert [(s.fault.name, s.start_s, s.heal_s, s.seed) for s in opts.plan()] == [("leader-kill", 4.0, 9.0, 3)]
    assert f"--schedule {f}" in opts.command()
    with pytest.raises(UsageError, match="names no scenario"):
        RunOptions(scenario=None, schedule_file=schedule_data.write(tmp_path / "p2.json", [])).resolved()


def test_run_refuses_a_bad_schedule_before_any_container(tmp_path, capsys):
    from kafka_chaos.harness.cli import main

    assert main(["run", "--schedule", str(tmp_path / "nope.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text(json.dumps({"steps": [{"at_s": 1, "fault": "nuke", "heal_after_s": 2}]}))
    assert main(["run", "leader-kill", "--schedule", str(tmp_path / "bad.json")]) == 2
    assert "step 1: unknown fault 'nuke'" in capsys.readouterr().err
    assert main(["run"]) == 2
    assert "needs a SCENARIO or a --schedule FILE" in capsys.readouterr().err
