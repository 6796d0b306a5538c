"""One home for each run setting: acks spelled and checked in one place, a run spec frozen and validated once."""
import dataclasses
import json

import pytest

from kafka_chaos.base.errors import UsageError
from kafka_chaos.checkers.check import reference_findings
from kafka_chaos.harness.cli import build_parser, main
from kafka_chaos.harness.run_cli import options_from_args
from kafka_chaos.harness.run_options import DEFAULT_MIN_ISR, RunOptions, chaos_cluster_config
from kafka_chaos.history.reader import sent_with, validate_run
from kafka_chaos.history.schema import ACKS_LEVELS, acks_level
from kafka_chaos.workloads.profile import ProducerProfile
from tests.checkers.conftest import read, send, write_run


def test_acks_levels_come_from_the_history_schema_and_minus_one_is_all():
    assert [acks_level(a) for a in ("0", "1", "all", "-1", -1)] == ["0", "1", "all", "all", "all"]
    with pytest.raises(ValueError):
        acks_level("2")
    acks = next(a for a in build_parser()._subparsers._group_actions[0].choices["run"]._actions
                if "--acks" in a.option_strings)
    assert tuple(acks.choices) == ACKS_LEVELS


@pytest.mark.parametrize("argv", [["--acks", "-1"], ["--acks", "all"]])
def test_the_command_line_s_acks_reaches_the_spec_and_the_recorded_command_as_a_level(argv):
    spec = options_from_args(build_parser().parse_args(["run", "leader-kill", *argv])).resolved()
    assert spec.acks == "all" and spec.idempotence is True and "--acks all " in spec.command()
    assert {p.acks for p in spec.profiles()} == {"all"}


def test_bad_acks_names_the_cause_and_the_remedy_and_exits_2(capsys):
    assert main(["run", "leader-kill", "--acks", "two"]) == 2
    err = capsys.readouterr().err
    assert "--acks two: not one of 0, 1, all, -1" in err and "remedy: use --acks 0, 1 or all" in err
    with pytest.raises(UsageError, match="use --acks 0, 1 or all"):
        RunOptions("leader-kill", acks="2", seed=1).resolved()
    with pytest.raises(UsageError, match="acks='2'"):
        ProducerProfile(acks="2")
    assert ProducerProfile(acks="-1").acks == "all"


def test_the_spec_is_frozen_validated_once_and_again_when_changed(monkeypatch):
    spec = RunOptions("leader-kill", acks="1", seed=3, duration_s=20).resolved()
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.acks = "0"
    calls = []
    monkeypatch.setattr(RunOptions, "_validate", lambda self, sc: calls.append(self))
    assert spec.resolved() is spec and calls == []
    changed = dataclasses.replace(spec, acks="-1", idempotence=None).resolved()
    assert calls == [changed] and changed.acks == "all" and changed.idempotence is True


def test_a_chaos_run_s_min_isr_has_one_default():
    assert RunOptions("leader-kill", seed=1).resolved().min_isr == DEFAULT_MIN_ISR
    assert chaos_cluster_config("run").min_insync_replicas == DEFAULT_MIN_ISR


def test_the_model_is_told_the_levels_the_sends_used_as_the_anomaly_pass_finds_them(tmp_path):
    sends = [send("a", offset=0, acks="1", idempotent=False), send("b", offset=1, acks="-1"),
             send("c", offset=2, acks="0", idempotent=False)]
    run = write_run(tmp_path / "mixed", sends, [read(v, offset=o) for v, o in (("a", 0), ("b", 1), ("c", 2))])
    present = validate_run(run)
    found = reference_findings({"mixed": run}, {"mixed": present})
    assert sent_with(present["history/sends.parquet"]) == (found.acks["mixed"], found.idempotent["mixed"])
    assert main(["check", str(run), "--engine", "pandas"]) in (0, 1)
    assert json.loads((run / "verdict.json").read_text())["model"]["acks"] == ["-1", "0", "1"]
