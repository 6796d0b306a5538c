"""`kafka-chaos report`: through the real CLI entry point, exit codes included."""
from __future__ import annotations

from kafka_chaos.harness.cli import main


def test_report_writes_the_page_and_prints_its_path(make_run, capsys):
    path = make_run()
    assert main(["report", str(path)]) == 0
    assert capsys.readouterr().out.strip() == str(path / "report.html")
    assert (path / "report.html").is_file()


def test_suite_writes_index_html(make_run, tmp_path, capsys):
    make_run("a")
    assert main(["report", "--suite", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "index.html")
    assert (tmp_path / "a" / "report.html").is_file()


def test_no_history_exits_2_with_the_cause_and_a_remedy(tmp_path, capsys):
    (tmp_path / "meta.json").write_text('{"run_id": "x"}')
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "has no history" in err and "history repair" in err
    assert not (tmp_path / "report.html").exists()


def test_a_missing_directory_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_both_or_neither_argument_exits_2(make_run, tmp_path, capsys):
    assert main(["report"]) == 2
    assert main(["report", str(make_run()), "--suite", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("give either RESULTS_DIR or --suite") == 2
