"""One table of exit codes for every command: a crash of kafka-chaos itself is never mistaken for a verdict."""
import pytest

from kafka_chaos.base import exits
from kafka_chaos.harness.cli import main


def test_an_internal_error_exits_4_not_1_which_means_a_violation(tmp_path, monkeypatch, capsys):
    import kafka_chaos.checkers.check

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(kafka_chaos.checkers.check, "check_many", broken)
    (tmp_path / "meta.json").write_text("{}")
    assert main(["check", str(tmp_path)]) == exits.CRASH == 4
    err = capsys.readouterr().err
    assert "internal error" in err and "RuntimeError: a bug" in err


def test_bad_input_exits_2_with_cause_and_remedy(tmp_path, capsys):
    assert main(["check", str(tmp_path / "absent")]) == exits.UNUSABLE == 2
    err = capsys.readouterr().err
    assert "no such directory" in err and "remedy" in err


def test_verbose_goes_before_or_after_the_subcommand(capsys):
    assert main(["-v", "scenarios"]) == 0
    assert main(["scenarios", "-v"]) == 0


def test_version_and_the_exit_codes_in_every_help(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("kafka-chaos ")
    for command in (["check"], ["run"], ["report"], ["nemesis", "heal"], ["cluster", "up"], ["history", "repair"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        assert "3 no verdict" in capsys.readouterr().out.replace("\n", " "), command
