"""The results index (report/index.py): rows from meta.json and verdict.json, suites one level down, trends,
relative links only, names and symlinks that would lead out of the root skipped; `kafka-chaos index` and `serve`."""
from __future__ import annotations

import json
import os
import re
import threading
import urllib.error
import urllib.request

import pytest

from kafka_chaos.harness.cli import main
from kafka_chaos.report.index import trends, write_index
from kafka_chaos.report.index_cli import make_server
from kafka_chaos.report.index_rows import local_row, locate_runs
from tests.report.index_roots import DAY_NS, T0, write_run
from tests.report.page import parse, visible_text


def data_of(html: str) -> list[dict]:
    return json.loads(re.search(r'<script type="application/json" id="index-data">(.*?)</script>', html, re.S)[1])


def test_a_row_carries_what_the_filters_need(tmp_path):
    write_run(tmp_path / "r1", scenario="leader-kill", version="3.9.1", acks="1", min_isr=1, mode="zookeeper",
              client="java", state="invalid", lost=7)
    (located,), suites = locate_runs(tmp_path)
    row = local_row(tmp_path, located)
    assert suites == []
    assert (row.scenario, row.kafka_version, row.metadata_mode, row.client, row.acks, row.min_isr) == \
        ("leader-kill", "3.9.1", "zookeeper", "java", "1", "1")
    assert (row.state, row.verdict, row.lost, row.lost_n) == ("invalid", "violated: 7 lost", "7 / never", 7)
    assert row.stalls == "3 · longest 4.5 s" and row.sends == "120,000" and row.report_href == "r1/report.html"


def test_suites_one_level_down_are_listed_with_their_pages_and_nothing_deeper(tmp_path):
    write_run(tmp_path / "top")
    write_run(tmp_path / "night-1" / "a")
    (tmp_path / "night-1" / "index.html").write_text("suite page")
    write_run(tmp_path / "night-2" / "b", report=False)
    write_run(tmp_path / "deep" / "x" / "y")            # two levels down: not a suite
    html = write_index(tmp_path).read_text()
    links = sorted(v for tag, _, v in parse(html).links if tag == "a")
    assert links == ["night-1/a/report.html", "night-1/index.html", "top/report.html"]
    assert sorted((d["suite"], d["run_id"]) for d in data_of(html)) == [("", "top"), ("night-1", "a"),
                                                                       ("night-2", "b")]
    assert "3 runs in 2 suites and the root" in visible_text(html)


def test_every_link_is_relative_and_resolves(tmp_path):
    write_run(tmp_path / "n1" / "a")
    write_run(tmp_path / "b")
    (tmp_path / "n1" / "index.html").write_text("x")
    html = write_index(tmp_path).read_text()
    links = [v for tag, _, v in parse(html).links if tag == "a"]
    assert links and all(not re.match(r"([a-z]+:)?//|/", v) for v in links)
    assert all((tmp_path / v).is_file() for v in links)


def test_names_that_are_not_run_ids_and_symlinks_out_of_the_root_are_skipped(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    write_run(root / "good")
    write_run(root / "bad name")
    write_run(outside / "elsewhere")
    os.symlink(outside / "elsewhere", root / "linked")
    os.symlink(outside, root / "linked-suite")
    assert [x.path.name for x in locate_runs(root)[0]] == ["good"]


def test_a_scenario_that_spells_a_closing_script_tag_stays_data(tmp_path):
    write_run(tmp_path / "r", scenario="</script><script>alert(1)</script>")
    html = write_index(tmp_path).read_text()
    assert "<script>alert(1)" not in html
    assert data_of(html)[0]["scenario"] == "</script><script>alert(1)</script>"


def test_trends_order_runs_in_time_and_call_a_configuration_flaky_when_it_flips(tmp_path):
    for night, state in enumerate(("valid", "invalid", "valid", "valid")):
        write_run(tmp_path / f"pl-{night}", scenario="power-loss", state=state, start_ns=T0 + night * DAY_NS)
    write_run(tmp_path / "steady", scenario="leader-kill")
    rows = [local_row(tmp_path, x) for x in locate_runs(tmp_path)[0]]
    first, second = trends(rows)
    assert first.scenario == "power-loss" and first.flaky and first.flips == 2
    assert first.states == ["valid", "invalid", "valid", "valid"]
    assert (second.scenario, second.flaky, second.flips) == ("leader-kill", False, 0)


def test_the_index_command_writes_the_page_and_refuses_a_missing_root(tmp_path, capsys):
    write_run(tmp_path / "r")
    assert main(["index", str(tmp_path)]) == 0
    assert (tmp_path / "index.html").is_file()
    assert main(["index", str(tmp_path / "nope")]) == 2
    assert "is not a directory" in capsys.readouterr().err


@pytest.fixture
def served(tmp_path):
    root = tmp_path / "root"
    write_run(root / "r")
    write_index(root)
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(tmp_path / "secret.txt", root / "escape.txt")
    server = make_server(root, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_serve_answers_on_loopback_with_the_index_and_the_reports_and_nothing_outside(served):
    assert served.startswith("http://127.0.0.1:")
    index = urllib.request.urlopen(f"{served}/").read().decode()
    assert "kafka-chaos results" in index
    assert urllib.request.urlopen(f"{served}/r/report.html").status == 200
    for path in ("/escape.txt", "/../secret.txt", "/%2e%2e/secret.txt"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"{served}{path}")
        assert e.value.code == 404


def test_a_root_of_suites_only_says_so(tmp_path):
    write_run(tmp_path / "night-1" / "a")
    text = visible_text(write_index(tmp_path).read_text())
    assert "1 run in 1 suite ·" in text and "the root" not in text.split("·")[0]
