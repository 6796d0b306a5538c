"""replay and shrink end to end without a cluster: each 'run' writes a synthetic history, judged by the real
(pandas) checker, whose lost writes appear only when the plan holds both a split and a loss step. The real thing
on brokers is scripts/shrink_demo.sh (figures in the README)."""
import ast
import json
import shutil
import tempfile
from pathlib import Path

import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.checkers.check import check_run
from kafka_chaos.harness import replay as replay_mod
from kafka_chaos.harness.cli import main
from kafka_chaos.harness.replay import Recorded, Trials, options_from_command, signature
from kafka_chaos.harness.runner import RunResult
from kafka_chaos.harness.shrink import parse_budget, shrink_run
from kafka_chaos.history.synthetic import write_synthetic_run
from kafka_chaos.nemesis import schedule_data
from kafka_chaos.nemesis.schedule import Step, spec

COMMAND = ("kafka-chaos run random-mix --acks all --min-isr 1 --idempotence --unclean --duration 60 --seed 3 "
           "--rate 500 --broker-config replica.lag.time.max.ms=8000 --engine pandas")
PLAN = [Step(5.0, spec("leader-kill", topic="chaos"), 12.0, 1), Step(14.0, spec("split"), 22.0, 2),
        Step(25.0, spec("leader-pause", topic="chaos"), 30.0, 3), Step(33.0, spec("loss", probability=0.3), 40.0, 4),
        Step(42.0, spec("client-isolate"), 48.0, 5)]


_TEMPLATES: dict[bool, Path] = {}


def synthetic(run_dir, lost: bool):
    """A judged synthetic run at run_dir, with two lost writes or none; each kind is written and checked once, then
    copied (a search makes dozens of runs)."""
    if lost not in _TEMPLATES or not _TEMPLATES[lost].is_dir():
        template = Path(tempfile.mkdtemp(prefix="h17-synthetic-")) / "run"
        write_synthetic_run(template, sends=400, seed=3, inject={"lost": 2} if lost else None)
        meta = json.loads((template / "meta.json").read_text())
        meta["command"] = COMMAND
        (template / "meta.json").write_text(json.dumps(meta))
        check_run(template, force=True, engine="pandas")
        _TEMPLATES[lost] = template
    shutil.copytree(_TEMPLATES[lost], run_dir)
    meta = json.loads((run_dir / "meta.json").read_text())
    (run_dir / "meta.json").write_text(json.dumps(meta | {"run_id": run_dir.name}))
    return json.loads((run_dir / "verdict.json").read_text())


@pytest.fixture(scope="module", autouse=True)
def _templates_removed():
    """The templates live outside any test's tmp_path (they are shared): removed with the module."""
    yield
    for template in _TEMPLATES.values():
        shutil.rmtree(template.parent, ignore_errors=True)
    _TEMPLATES.clear()


def make_original(root):
    run_dir = root / "results" / "orig-run"
    synthetic(run_dir, lost=True)
    schedule_data.write(run_dir / "schedule.json", PLAN, "random-mix", 3, 60)
    return run_dir


def fake_runs(monkeypatch):
    """Trials.run replaced: a synthetic run whose loss needs a split and a loss step in the plan it was given."""
    seen = []

    def fake_run(self, opts):
        plan = schedule_data.read(opts.schedule_file)
        seen.append((opts, plan))
        names = {s.fault.name for s in plan.steps}
        run_dir = opts.results / opts.run_id
        verdict = synthetic(run_dir, lost={"split", "loss"} <= names)
        return RunResult(run_dir, 0 if verdict["valid"] else 1, verdict, None)

    monkeypatch.setattr(Trials, "run", fake_run)
    return seen


@pytest.fixture
def original(tmp_path):
    return make_original(tmp_path)


@pytest.fixture
def runs(monkeypatch):
    return fake_runs(monkeypatch)


@pytest.fixture(scope="module")
def shrunk(tmp_path_factory):
    """One shrink of the original (a search makes a few dozen synthetic runs): (result, out dir, runs seen)."""
    with pytest.MonkeyPatch.context() as mp:
        seen = fake_runs(mp)
        result, out = shrink_run(make_original(tmp_path_factory.mktemp("shrink")), "lost", budget_s=600, retries=1)
    return result, out, seen


def test_the_recorded_command_gives_the_same_options():
    opts = options_from_command(COMMAND).resolved()
    assert (opts.scenario, opts.acks, opts.min_isr, opts.unclean, opts.seed, opts.duration_s, opts.rate) == \
        ("random-mix", "all", 1, True, 3, 60, 500)
    assert opts.cluster.broker_config == {"replica.lag.time.max.ms": "8000"}
    assert opts.command() == COMMAND              # and it prints back the same line
    with pytest.raises(UsageError, match="not `kafka-chaos run"):
        options_from_command("kafka-chaos check results")


def test_replay_plays_the_recorded_plan_and_counts_recurrence(original, runs, capsys):
    assert main(["replay", str(original), "--tries", "3"]) == 1       # the injected losses are violations
    assert len(runs) == 3
    for opts, plan in runs:
        assert opts.seed == 3 and opts.schedule_file == original / "schedule.json" and list(plan.steps) == PLAN
    out = capsys.readouterr().out
    assert "lost: came back in 3 of 3 tries" in out and "the same anomaly kinds came back" in out
    report = json.loads((original.parent / "orig-run.replay" / "replay.json").read_text())
    assert report["all_back"] == 3 and report["recurred"] == {"lost": 3, "violation": 3}


def test_shrink_finds_the_two_steps_and_writes_a_test_and_a_report(shrunk):
    result, out, runs = shrunk
    assert sorted(s.fault.name for s in result.smallest) == ["loss", "split"]
    kept = json.loads((out / "schedule.json").read_text())
    assert [s["fault"] for s in kept["steps"]] == ["split", "loss"]
    assert kept["seed"] == 3 and kept["duration_s"] < 60
    # every candidate ran with the run's settings and a duration cut to its plan
    for opts, plan in runs:
        assert (opts.seed, opts.acks, opts.min_isr, opts.unclean, opts.engine) == (3, "all", 1, True, "pandas")
        assert opts.duration_s == pytest.approx(max(s.heal_s for s in plan.steps) + 12, abs=0.11)   # the 12 s tail
    test_file = out / "test_repro_orig_run.py"
    source = test_file.read_text()
    ast.parse(source)
    assert "def test_repro_orig_run(tmp_path)" in source and COMMAND in source
    report = (out / "shrink-report.md").read_text()
    assert "5 step(s)" in report and "-> 2 step(s)" in report and report.count("| drop |") >= 3


def test_the_generated_test_reproduces(shrunk, runs, tmp_path):
    """Run the generated file's test function with the stand-in runs: it passes; with a plan that lost its
    split it fails, naming the tries."""
    _, out, _ = shrunk
    namespace = {}
    exec(compile((out / "test_repro_orig_run.py").read_text(), "repro", "exec"), namespace)
    namespace["test_repro_orig_run"](tmp_path / "a")
    assert len(runs[-1][1].steps) == 2
    namespace["SCHEDULE"]["steps"] = [s for s in namespace["SCHEDULE"]["steps"] if s["fault"] != "split"]
    with pytest.raises(AssertionError, match="lost in 0 of 3 tries"):
        namespace["test_repro_orig_run"](tmp_path / "b")


def test_shrink_refuses_a_target_the_run_does_not_show(tmp_path, runs):
    run_dir = tmp_path / "clean"
    synthetic(run_dir, lost=False)
    with pytest.raises(UsageError, match="nothing to shrink"):
        shrink_run(run_dir)
    with pytest.raises(UsageError, match="does not show lost"):
        shrink_run(run_dir, "lost")
    with pytest.raises(UsageError, match="no meta.json"):
        Recorded.load(tmp_path)
    assert runs == []


def test_budget_and_signature():
    assert [parse_budget(b) for b in ("30m", "2h", "90s", "45")] == [1800, 7200, 90, 45]
    with pytest.raises(UsageError):
        parse_budget("soon")
    assert signature({"valid": False, "anomalies": {"lost": 2, "stall": 1, "recovered": 3},
                      "model_disagreements": [{}]}) == {"lost", "violation", "disagreement"}
    assert replay_mod.matches({"anomalies": {"lost": 0}}, "lost") is False
