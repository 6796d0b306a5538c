"""The HTML loss report: one self-contained report.html per results directory.

The page embeds plotly.js once, inline (the vendored basic bundle, report/bundle.py), and each figure as JSON
(numpy arrays travel as base64 "bdata"); a small script draws them all and records when it finished in
`body[data-rendered-ms]`, which the browser test and the benchmark read. Nothing on the page loads from the network.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import jinja2
import plotly.graph_objects as go
from markupsafe import Markup

from kafka_chaos.history.layout import REPORT_FILE
from kafka_chaos.report import bundle, data, figures, stalls, tables
from kafka_chaos.report.client_errors import client_errors
from kafka_chaos.report.data import ReportOptions, RunData
from kafka_chaos.report.disagreements import disagreement_rows

TEMPLATES = Path(__file__).parent / "templates"
REPORT_NAME = REPORT_FILE


@dataclass(frozen=True)
class EmbeddedFigure:
    id: str
    json: Markup


def template_environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def figure_json(fig: go.Figure) -> Markup:
    """The figure as JSON safe inside a <script> element: no "<" can close it early."""
    bundle.check_drawable(fig)
    return Markup(fig.to_json().replace("<", "\\u003c"))


def render_report(run: RunData, options: ReportOptions = ReportOptions()) -> str:
    """The report page for a loaded run, as a string."""
    tl = data.timeline(run, options)
    windows = data.fault_windows(run)
    markers = data.anomaly_markers(run, options)
    end_s = (run.end_ns - run.start_ns) / 1e9
    shown = data.partitions_to_plot(run, options)
    series = data.partition_series(run, shown)
    lost_rows = tables.lost_offsets(run, options)

    embedded = [EmbeddedFigure("fig-timeline", figure_json(figures.timeline_figure(tl, windows, markers)))]
    if series:
        embedded.append(EmbeddedFigure("fig-partitions", figure_json(figures.partition_figure(
            series, windows, markers, end_s, run.meta.get("min_insync_replicas"),
            run.meta.get("replication_factor"), data.availability_bands(run)))))
    if lost_rows:
        embedded.append(EmbeddedFigure("fig-lost", figure_json(figures.lost_per_partition_figure(lost_rows))))

    counts = tables.anomaly_counts(run)
    facts = tables.run_facts(run)
    total_partitions = run.cluster["partition"].nunique() if not run.cluster.empty else 0
    context = dict(
        run_id=run.run_id,
        scenario=dict(facts)["Scenario"],
        kafka_version=dict(facts)["Kafka version"],
        generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        banner=tables.verdict_banner(run),
        facts=facts,
        command=tables.reproduce_command(run),
        predictions=tables.prediction_rows(run),
        disagreements=disagreement_rows(run),
        counts=tables.history_counts(run),
        producers=tables.producer_rows(run),
        clients=(run.verdict or {}).get("clients") or {},
        brokers=tables.broker_settings(run),
        markers_capped=bool(counts) and any(r["total"] > options.max_markers_per_kind for r in counts),
        max_markers=options.max_markers_per_kind,
        has_partitions=bool(series),
        partitions_note=(f"Showing {len(series)} of {total_partitions} partitions: those with anomalies first."
                         if len(series) < total_partitions else ""),
        lost_rows=lost_rows,
        stall_tables=stalls.stall_tables(run),
        checked=run.anomalies is not None or run.verdict is not None,
        anomaly_counts=counts,
        kind_totals={r["kind"]: r["total"] for r in counts},
        examples=tables.anomaly_examples(run, options),
        files=tables.file_links(run.path),
        figures=embedded,
        client_errors=client_errors(run),
        plotlyjs=Markup(bundle.plotly_js()),
    )
    return template_environment().get_template("report.html.j2").render(**context)


def write_report(results_dir: Path | str, options: ReportOptions = ReportOptions(),
                 out: Path | None = None) -> Path:
    """Writes RESULTS_DIR/report.html (or `out`) and returns its path. HarnessError when there is no history."""
    run = data.load_run(results_dir)
    target = Path(out) if out is not None else run.path / REPORT_NAME
    html = render_report(run, options)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(target)
    return target
