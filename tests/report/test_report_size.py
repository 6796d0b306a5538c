"""A report a suite can carry: under 1.5 MB with plotly.js inline, because the inline bundle is plotly's basic one
(report/bundle.py), which must match the plotly.py that builds the figures and draw every trace they use."""
from __future__ import annotations

import plotly.graph_objects as go
import pytest
from plotly.offline import get_plotlyjs, get_plotlyjs_version

from kafka_chaos.report import bundle
from kafka_chaos.report.page import write_report
from tests.report.page import figure

MAX_REPORT_BYTES = 1_500_000


def test_a_long_run_with_anomalies_makes_a_report_under_1_5_mb(make_run):
    path = write_report(make_run("long", sends=60_000, partitions=6, duration_s=600, lost=400, duplicates=50,
                                 isolate_at_s=200, heal_at_s=260, kill_at_s=400))
    size = path.stat().st_size
    assert len(bundle.plotly_js()) < size < MAX_REPORT_BYTES, size
    assert size < len(get_plotlyjs()) / 3     # the full bundle alone is over three times that


def test_the_report_inlines_the_vendored_bundle_and_loads_no_script(shared_reports):
    _, html = shared_reports["invalid"]
    assert html.count(bundle.plotly_js()) == 1
    assert "<script src" not in html and "<link" not in html   # the browser test sees no request at all


def test_the_vendored_bundle_matches_the_plotly_js_that_plotly_py_builds_for():
    vendored, wanted = bundle.bundle_version(), get_plotlyjs_version()
    assert vendored.split(".")[0] == wanted.split(".")[0], (
        f"report/vendor has plotly.js {vendored}, plotly.py builds for {wanted}: run scripts/vendor-plotly.sh")
    assert (bundle.VENDOR / "LICENSE.plotly.js").read_text().startswith("MIT License")


def test_every_trace_in_a_report_is_one_the_bundle_draws(shared_reports):
    _, html = shared_reports["invalid"]
    for fig_id in ("fig-timeline", "fig-partitions", "fig-lost"):
        assert {t.get("type", "scatter") for t in figure(html, fig_id)["data"]} <= bundle.TRACE_TYPES


def test_a_figure_the_bundle_cannot_draw_fails_while_making_the_report():
    with pytest.raises(ValueError, match="cannot draw \\['heatmap'\\]"):
        bundle.check_drawable(go.Figure(go.Heatmap(z=[[1, 2], [3, 4]])))
