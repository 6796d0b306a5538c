"""The suite page: one row per run, newest first, with a link to each run's report."""
from __future__ import annotations

import json
import os
import re

from kafka_chaos.report.suite import SuiteOptions, write_suite
from tests.report.page import parse, visible_text


def rows(html: str) -> list[str]:
    return re.findall(r'<tr class="run (\w+)">', html)


def test_one_row_per_run_with_verdict_lost_against_predicted_and_a_report_link(make_run, tmp_path):
    make_run("a-valid", lost=2)
    make_run("b-invalid", lost=2, lost_violations=1)
    make_run("c-unchecked", checked=False)
    index = write_suite(tmp_path)
    html = index.read_text()
    assert index == tmp_path / "index.html"
    assert sorted(rows(html)) == ["invalid", "unchecked", "valid"]
    text = visible_text(html)
    assert "violated: 1 lost" in text and "not checked" in text
    assert "3 / possible" in text                    # b: 3 lost, the model said possible
    assert "p0 acks=all idem · p1 acks=1 · RF 3 · min ISR 2" in text
    assert "60 s" in text and "3,000" in text
    links = [v for tag, _, v in parse(html).links if tag == "a"]
    assert sorted(links) == ["a-valid/report.html", "b-invalid/report.html", "c-unchecked/report.html"]
    assert all((tmp_path / link).is_file() for link in links)   # the suite wrote the missing reports


def test_the_summary_counts_the_runs_by_verdict(make_run, tmp_path):
    make_run("a", lost=1)
    make_run("b", lost=1, lost_violations=1)
    html = write_suite(tmp_path, SuiteOptions(build_reports=False)).read_text()
    assert "1 run violated Kafka's guarantees" in visible_text(html)
    assert "1 valid · 1 invalid · 0 no verdict · 0 not checked · 0 broken" in visible_text(html)


def test_every_run_valid_gives_a_green_summary(make_run, tmp_path):
    make_run("a")
    html = write_suite(tmp_path, SuiteOptions(build_reports=False)).read_text()
    assert '<section id="summary" class="banner valid">' in html
    assert "Every run valid" in visible_text(html)


def test_a_run_without_history_is_listed_as_broken_without_a_link(make_run, tmp_path):
    make_run("good")
    (tmp_path / "crashed").mkdir()
    (tmp_path / "crashed" / "meta.json").write_text('{"run_id": "crashed"}')
    html = write_suite(tmp_path).read_text()
    assert sorted(rows(html)) == ["broken", "valid"]
    assert "no history" in visible_text(html)
    assert [v for tag, _, v in parse(html).links if tag == "a"] == ["good/report.html"]


def test_directories_that_are_not_runs_are_ignored(make_run, tmp_path):
    make_run("run")
    (tmp_path / "notes").mkdir()
    assert len(rows(write_suite(tmp_path, SuiteOptions(build_reports=False)).read_text())) == 1


def test_runs_are_listed_newest_first(make_run, tmp_path):
    for name, start in (("old", 1_000), ("new", 3_000), ("mid", 2_000)):
        path = make_run(name)
        meta = json.loads((path / "meta.json").read_text())
        meta["start_ns"], meta["end_ns"] = start * 10**9, (start + 60) * 10**9
        (path / "meta.json").write_text(json.dumps(meta))
    html = write_suite(tmp_path, SuiteOptions(build_reports=False)).read_text()
    assert re.findall(r'<td class="mono">(\w+)</td>', html) == ["new", "mid", "old"]


def test_a_report_older_than_its_verdict_is_rebuilt_and_a_fresh_one_is_kept(make_run, tmp_path):
    stale, fresh = make_run("stale"), make_run("fresh")
    for path in (stale, fresh):
        (path / "report.html").write_text("old report")
    past = os.stat(stale / "verdict.json").st_mtime - 100
    os.utime(stale / "report.html", (past, past))
    write_suite(tmp_path)
    assert (stale / "report.html").read_text() != "old report"
    assert (fresh / "report.html").read_text() == "old report"


def test_without_building_missing_reports_are_not_linked(make_run, tmp_path):
    make_run("a")
    html = write_suite(tmp_path, SuiteOptions(build_reports=False)).read_text()
    assert not (tmp_path / "a" / "report.html").exists()
    assert "report.html" not in html


def test_an_empty_root_says_so(tmp_path):
    assert "No results directories" in visible_text(write_suite(tmp_path).read_text())


def test_the_suite_page_is_self_contained(make_run, tmp_path):
    make_run("a")
    html = write_suite(tmp_path).read_text()
    parser = parse(html)
    assert not [v for _, _, v in parser.links if re.match(r"(https?:)?//", v)]
    assert all("src" not in s for s in parser.scripts)
