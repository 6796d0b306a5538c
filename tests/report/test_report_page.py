"""What report.html says and holds, read back from the file (no browser: see test_report_browser.py)."""
from __future__ import annotations

import json
import re

import pytest

from kafka_chaos.base.errors import HarnessError
from kafka_chaos.history.synthetic import write_synthetic_run
from kafka_chaos.report.data import ReportOptions
from kafka_chaos.report.page import write_report
from tests.report.page import figure, parse, values, visible_text


def report_html(path, **options) -> str:
    return write_report(path, ReportOptions(**options)).read_text()


def test_report_is_written_into_the_results_directory(make_run):
    path = make_run()
    assert write_report(path) == path / "report.html"
    assert (path / "report.html").stat().st_size > 1_000_000  # plotly.js is inline


def test_a_valid_run_says_valid_at_the_top(shared_reports):
    _, html = shared_reports["valid"]
    banner = re.search(r'<section id="verdict" class="banner (\w+)"', html).group(1)
    assert banner == "valid"
    text = visible_text(html)
    assert "Valid: Kafka's guarantees held" in text
    assert "4 lost, 2 duplicate" in text   # anomalies the model allows are still named


def test_an_invalid_run_names_its_violations(shared_reports):
    _, html = shared_reports["invalid"]
    assert 'data-verdict="invalid"' in html
    text = visible_text(html)
    assert "Invalid: guarantees violated" in text
    assert "1 lost write" in text


def test_a_run_without_verdict_is_reported_under_a_not_checked_banner(shared_reports):
    _, html = shared_reports["unchecked"]
    assert 'data-verdict="unchecked"' in html
    text = visible_text(html)
    assert "Not checked" in text and "kafka-chaos check" in text
    assert "predictions" not in parse(html).ids
    assert figure(html, "fig-timeline")["data"]   # the history is still drawn


def test_the_header_gives_scenario_version_settings_seed_and_the_command(shared_reports):
    text = visible_text(shared_reports["valid"][1])
    for expected in ("leader-isolate", "4.1.0", "3 partitions, replication factor 3, min.insync.replicas 2",
                     "kafka-chaos run leader-isolate --seed 42 --duration 60s", "replica.lag.time.max.ms=10000"):
        assert expected in text
    assert re.search(r"Seed\s+42", text)


def test_predicted_is_shown_beside_observed(shared_reports):
    _, html = shared_reports["invalid"]
    rows = re.findall(r"<tr><td>([^<]+)</td><td>([^<]+)</td><td>([^<]+)</td>\s*<td><span class=\"status (\w+)\"",
                      html)
    table = {what: (predicted, observed, status) for what, predicted, observed, status in rows}
    assert table["Acked writes lost"] == ("possible", "6 (1 guaranteed, 5 at risk)", "violated")
    assert table["Duplicates"] == ("possible", "2", "allowed")
    assert table["Unavailability"][0] == "1 window, 9.0 s"


def test_timeline_shades_every_fault_window_and_marks_lost_writes_at_their_ack_time(shared_reports):
    path, html = shared_reports["valid"]   # isolation 20-35 s, a kill at 48 s never healed, 60 s run
    fig = figure(html, "fig-timeline")
    shaded = {(s["x0"], s["x1"]) for s in fig["layout"]["shapes"] if s["type"] == "rect"}
    assert shaded == {(20.0, 35.0), (48.0, 60.0)}
    labels = [a["text"] for a in fig["layout"]["annotations"]]
    assert "leader-isolate [1]" in labels and "kill [3] (not healed)" in labels
    (lost,) = [t for t in fig["data"] if t.get("name") == "lost"]
    meta = json.loads((path / "meta.json").read_text())
    import pyarrow.parquet as pq
    anomalies = pq.read_table(path / "anomalies.parquet").to_pandas()
    expected = (anomalies[anomalies["kind"] == "lost"]["t_complete_ns"] - meta["start_ns"]) / 1e9
    assert sorted(values(lost["x"])) == pytest.approx(sorted(expected))


def test_timeline_plots_throughput_by_outcome_and_latency_quantiles(shared_reports):
    names = {t.get("name") for t in figure(shared_reports["unchecked"][1], "fig-timeline")["data"]}
    assert {"ok /s", "fail /s", "info /s", "p50 latency", "p99 latency", "max latency"} <= names


def test_partitions_show_leader_and_isr_size_with_min_insync_replicas(make_run):
    fig = figure(report_html(make_run(partitions=2)), "fig-partitions")
    titles = [a["text"] for a in fig["layout"]["annotations"]]
    assert {"partition 0: leader", "partition 0: ISR size",
            "partition 1: leader", "partition 1: ISR size"} <= set(titles)
    isr = [t for t in fig["data"] if t.get("name") == "ISR size"]
    assert len(isr) == 2 and values(isr[0]["y"]).max() == 3
    assert any(s.get("y0") == 2 and s["type"] == "line" for s in fig["layout"]["shapes"])


def test_lost_offsets_are_listed_per_partition(shared_reports):
    path, html = shared_reports["valid"]
    import pyarrow.parquet as pq
    lost = pq.read_table(path / "anomalies.parquet").to_pandas().query("kind == 'lost'")
    row = re.search(r'<table id="lost-offsets">.*?</table>', html, re.S).group(0)
    for offset in lost["offset"]:
        assert str(offset) in row
    bars = figure(html, "fig-lost")["data"]
    assert sum(values(b["y"]).sum() for b in bars) == 4


def test_anomaly_examples_give_context_leader_isr_neighbours_and_reason(shared_reports):
    _, html = shared_reports["valid"]
    counts = re.search(r'<table id="anomaly-counts".*?</table>', html, re.S).group(0)
    assert re.search(r">lost</a></td><td class=\"num\">4</td>", counts)
    lost_table = re.search(r'<h3 id="kind-lost">lost: first 4 of 4</h3>\s*<table class="examples">(.*?)</table>',
                           html, re.S).group(1)
    rows = re.findall(r"<tr><td class=\"mono\">.*?</tr>", lost_table, re.S)
    assert len(rows) == 4
    for row in rows:
        assert re.search(r'<span class="self missing">\d+: —</span>', row)   # the lost offset was not read
        assert re.search(r"\{[\d,]+\} \(\d+\.\d s before\)", row)            # ISR at ack time, from the samples
        assert "acks=1: acked by leader 1 alone" in row


def test_examples_are_capped_per_kind_with_violations_first(make_run):
    html = report_html(make_run(lost=8, lost_violations=2), examples_per_kind=3)
    section = re.search(r'<h3 id="kind-lost">lost: first 3 of 10</h3>(.*?)</table>', html, re.S).group(1)
    judged = re.findall(r'<span class="status (\w+)">', section)
    assert judged == ["violation", "violation", "allowed"]


def test_links_to_logs_and_history_files_are_relative_and_exist(shared_reports):
    path, html = shared_reports["valid"]
    parser = parse(html)
    hrefs = [v for tag, attr, v in parser.links if tag == "a" and not v.startswith("#")]
    for expected in ("logs/kafka-1.log", "history/sends.parquet", "history/reads.parquet", "verdict.json",
                     "anomalies.parquet", "meta.json"):
        assert expected in hrefs
    assert all((path / href).exists() for href in hrefs)


def test_nothing_on_the_page_loads_from_a_url(shared_reports):
    _, html = shared_reports["invalid"]
    parser = parse(html)
    assert not [v for _, _, v in parser.links if re.match(r"(https?:)?//", v)]
    assert all("src" not in s for s in parser.scripts)                 # every script is inline
    assert "<link" not in html and "@import" not in html and "url(http" not in html
    code_scripts = [s for s in parser.scripts if s.get("type") != "application/json"]
    assert len(code_scripts) == 2  # plotly.js once, then the script that draws the figures
    assert html.count("Plotly.newPlot") >= 1


def test_a_report_from_a_large_history_draws_buckets_not_rows(make_run, shared_reports):
    """Size is bounded by the options, not the history (the benchmark measures the 1M case)."""
    small = shared_reports["valid"][1]
    large = report_html(make_run("large", sends=60_000, lost=300), max_markers_per_kind=50)
    assert len(large) < len(small) + 200_000
    lost = [t for t in figure(large, "fig-timeline")["data"] if t.get("name") == "lost"][0]
    assert len(values(lost["x"])) == 50


def test_a_run_without_meta_cluster_or_faults_still_gets_a_report(make_run):
    path = make_run(with_meta=False, with_cluster=False, with_faults=False)
    html = report_html(path)
    text = visible_text(html)
    assert "meta.json missing" in text
    assert "No cluster samples" in text
    assert "fig-partitions" not in parse(html).ids
    assert not figure(html, "fig-timeline")["layout"].get("shapes")


def test_text_from_the_history_is_escaped(make_run):
    path = make_run()
    verdict = json.loads((path / "verdict.json").read_text())
    verdict["meta"]["scenario"] = "<script>alert(1)</script>"
    (path / "verdict.json").write_text(json.dumps(verdict))
    meta = json.loads((path / "meta.json").read_text())
    meta.pop("scenario")
    meta["command"] = "run --x '</script><b>'"
    (path / "meta.json").write_text(json.dumps(meta))
    html = report_html(path)
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)" in html
    assert "</script><b>" not in html


def test_no_history_is_bad_input(tmp_path):
    with pytest.raises(HarnessError, match="no history"):
        write_report(tmp_path)


def test_the_checkers_synthetic_runs_get_a_report(tmp_path):
    """The report reads what history.synthetic writes (the documented format), before any check."""
    path = write_synthetic_run(tmp_path / "synthetic", sends=3000, partitions=3, seed=1, faults=True)
    html = report_html(path)
    assert 'data-verdict="unchecked"' in html
    fig = figure(html, "fig-timeline")
    assert fig["layout"]["shapes"]   # the synthetic kill is shaded
    assert figure(html, "fig-partitions")["data"]


def test_a_run_without_a_verdict_says_so_and_why_and_shades_stalls_beside_predicted_windows(make_run):
    path = make_run("incomplete")
    verdict = json.loads((path / "verdict.json").read_text())
    start = json.loads((path / "meta.json").read_text()).get("start_ns") or min(
        w[0] for w in verdict["predicted"]["unavailable_windows"])
    verdict.update(valid=None, status="incomplete",
                   incomplete={"status": "incomplete", "run": [],
                               "partitions": {"1": "the final drain did not read this partition to its end"}},
                   availability={"threshold_s": 2.0, "stalled_s": 12.0, "unpredicted_s": 4.0, "longest_s": 12.0,
                                 "stalls": [[start + 20 * 10**9, start + 32 * 10**9, 0, 4.0]]})
    (path / "verdict.json").write_text(json.dumps(verdict))
    html = report_html(path)
    assert re.search(r'<section id="verdict" class="banner (\w+)"', html).group(1) == "incomplete"
    text = visible_text(html)
    assert "No verdict: the run could not be judged" in text
    assert "Partition 1: the final drain did not read this partition to its end" in text
    assert "observed stall" in html and "predicted unavailable (model)" in html
