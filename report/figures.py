"""The report's plotly figures, built from the downsampled frames in report_data.

Every time axis is seconds since the run's start, and every figure shades the same fault windows, so a reader
can line up a fault with what it did to throughput, latency, leadership and the data.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kafka_chaos.history.kinds import KINDS
from kafka_chaos.report.data import FaultWindow, PartitionSeries, Timeline

COLOURS = {"ok": "#2e7d32", "fail": "#c62828", "info": "#ef6c00", "p50": "#1565c0", "p95": "#6a1b9a",
           "p99": "#ad1457", "max": "#9e9e9e", "leader": "#37474f", "isr": "#1565c0", "elr": "#8d6e63"}
FAULT_FILL = {"kill": "#e53935", "stop": "#fb8c00", "pause": "#8e24aa", "net": "#fdd835", "loss": "#ffb300",
              "latency": "#00acc1"}
KIND_MARKERS = {k: v.marker for k, v in KINDS.items() if v.marker}     # declared in history/kinds.py
FONT = dict(family="system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif", size=12)


# A small white theme instead of a stock template: "plotly_white" is large, slow to copy and embedded in every figure.
AXIS_STYLE = dict(gridcolor="#ececec", linecolor="#bdbdbd", zerolinecolor="#e0e0e0", ticks="outside",
                  tickcolor="#bdbdbd", automargin=True)


def _base_layout(fig: go.Figure, height: int, title: str) -> None:
    fig.update_xaxes(**AXIS_STYLE)
    fig.update_yaxes(**AXIS_STYLE)
    fig.update_layout(template="none", paper_bgcolor="white", plot_bgcolor="white", height=height, font=FONT,
                      title=dict(text=title, x=0, font_size=15),
                      margin=dict(l=70, r=20, t=80, b=40), hovermode="x unified",
                      legend=dict(orientation="v", yanchor="top", y=1.0, x=1.01, xanchor="left",
                                  font=dict(size=11)))


def fault_shapes(windows: list[FaultWindow]) -> tuple[list[dict], list[dict]]:
    """One band per window across every row (the x axes are shared), and its label above the top row.

    Plain dicts added in one layout update: plotly's add_vrect revalidates every shape on each call, which is
    quadratic and took seconds for a few partitions.
    """
    shapes, labels = [], []
    for i, w in enumerate(windows):
        shapes.append(dict(type="rect", xref="x", yref="paper", x0=w.start_s, x1=w.end_s, y0=0, y1=1,
                           fillcolor=FAULT_FILL.get(w.effect, "#bdbdbd"), opacity=0.18, layer="below",
                           line=dict(width=0)))
        labels.append(dict(x=w.start_s, y=1.0, xref="x", yref="paper", yanchor="bottom", xanchor="left",
                           yshift=2 + 14 * (i % 2), text=w.label + ("" if w.healed else " (not healed)"),
                           showarrow=False, font=dict(size=11, color="#424242"), bgcolor="rgba(255,255,255,0.7)"))
    return shapes, labels


def fault_legend(fig: go.Figure, windows: list[FaultWindow]) -> None:
    """One legend entry per fault effect, since shapes are not in the legend."""
    for effect in dict.fromkeys(w.effect for w in windows):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"fault: {effect or 'other'}",
                                 marker=dict(symbol="square", size=12, color=FAULT_FILL.get(effect, "#bdbdbd"),
                                             opacity=0.4), hoverinfo="skip"), row=1, col=1)


def add_decorations(fig: go.Figure, shapes: list[dict], annotations: list[dict]) -> None:
    """Adds shapes and annotations in a single layout update (keeping make_subplots' titles)."""
    fig.update_layout(shapes=list(fig.layout.shapes) + shapes,
                      annotations=list(fig.layout.annotations) + annotations)


def timeline_figure(tl: Timeline, windows: list[FaultWindow], markers: pd.DataFrame) -> go.Figure:
    """Throughput by outcome, latency quantiles, and anomalies at their ack time, one row each."""
    kinds = list(dict.fromkeys(markers["kind"])) if len(markers) else []
    rows = 3 if kinds else 2
    heights = [0.42, 0.38, 0.20] if kinds else [0.5, 0.5]
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.05, row_heights=heights)
    t = tl.t_s
    for outcome in ("ok", "fail", "info"):
        y = getattr(tl, f"{outcome}_per_s")
        fig.add_trace(go.Scatter(x=t, y=y, name=f"{outcome} /s", mode="lines", line=dict(width=1.4, shape="hv",
                                 color=COLOURS[outcome]), legendgroup="ops"), row=1, col=1)
    for q in ("p50", "p95", "p99", "max"):
        fig.add_trace(go.Scatter(x=t, y=tl.latency_ms[q], name=f"{q} latency", mode="lines", connectgaps=False,
                                 line=dict(width=1.2 if q != "max" else 0.8, color=COLOURS[q],
                                           dash="dot" if q == "max" else None)), row=2, col=1)
    for kind in kinds:
        symbol, colour = KIND_MARKERS.get(kind, ("circle", "#424242"))
        of_kind = markers[markers["kind"] == kind]
        for judged, size in (("allowed", 7), ("violation", 11)):  # uniform styles per trace draw fastest
            shown = of_kind[(of_kind["classification"] == "violation") == (judged == "violation")]
            if shown.empty:
                continue
            fig.add_trace(go.Scatter(
                x=shown["t_s"].to_numpy(dtype=float), y=np.full(len(shown), kind), mode="markers",
                name=kind if judged == "allowed" else f"{kind} (violation)", legendgroup=kind,
                marker=dict(symbol=symbol, size=size, color=colour, opacity=0.8 if judged == "allowed" else 1),
                customdata=np.stack([shown["partition"].astype(str), shown["offset"].astype(str)], axis=1),
                hovertemplate=f"%{{y}} p%{{customdata[0]}} offset %{{customdata[1]}} ({judged})<extra></extra>"),
                row=3, col=1)
    fault_legend(fig, windows)
    add_decorations(fig, *fault_shapes(windows))
    _base_layout(fig, 620 if kinds else 500, f"Timeline ({tl.bucket_s:g} s buckets)")
    fig.update_layout(hovermode="closest")
    fig.update_yaxes(title_text="operations / s", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="ack latency (ms)", type="log", dtick=1, row=2, col=1)
    if kinds:
        fig.update_yaxes(title_text="anomalies", type="category", categoryorder="array", categoryarray=kinds[::-1],
                         row=3, col=1)
    fig.update_xaxes(title_text="seconds since start", row=rows, col=1)
    return fig


AVAILABILITY_BANDS = {"predicted": ((0.0, 0.12), "rgba(117,117,117,0.45)", "predicted unavailable (model)"),
                      "observed": ((0.12, 0.24), "rgba(230,81,0,0.7)", "observed stall (writes pending, none acked)")}


def partition_figure(series: list[PartitionSeries], windows: list[FaultWindow], markers: pd.DataFrame,
                     end_s: float, min_isr: int | None, replication_factor: int | None,
                     bands: list[tuple[int, float, float, str]] = ()) -> go.Figure:
    """Two rows per partition: its leader, and its ISR size (with min.insync.replicas and lost writes). Along the
    bottom of each leader row, the model's predicted unavailable windows and the stalls the clients saw."""
    rows = 2 * len(series)
    titles = [t for s in series for t in (f"partition {s.partition}: leader", f"partition {s.partition}: ISR size")]
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.12 / max(rows, 1) + 0.02,
                        subplot_titles=titles)
    brokers = sorted({int(b) for s in series for b in s.leader if b >= 0})
    lost = markers[markers["kind"] == "lost"] if len(markers) else markers
    lost_in_legend = False
    lines: list[dict] = []
    line_labels: list[dict] = []
    axes: dict[str, dict] = {}
    for i, s in enumerate(series):
        leader_row, isr_row = 2 * i + 1, 2 * i + 2
        x = np.append(s.t_s, end_s) if end_s > s.t_s[-1] else s.t_s
        pad = (lambda a: np.append(a, a[-1])) if len(x) > len(s.t_s) else (lambda a: a)
        first = i == 0
        fig.add_trace(go.Scatter(x=x, y=pad(s.leader), mode="lines", name="leader", showlegend=first,
                                 legendgroup="leader", line=dict(shape="hv", color=COLOURS["leader"], width=2)),
                      row=leader_row, col=1)
        fig.add_trace(go.Scatter(x=x, y=pad(s.isr_size), mode="lines", name="ISR size", showlegend=first,
                                 legendgroup="isr", fill="tozeroy", fillcolor="rgba(21,101,192,0.12)",
                                 line=dict(shape="hv", color=COLOURS["isr"], width=2)), row=isr_row, col=1)
        if s.elr_size is not None and s.elr_size.any():
            fig.add_trace(go.Scatter(x=x, y=pad(s.elr_size), mode="lines", name="ELR size", showlegend=first,
                                     legendgroup="elr", line=dict(shape="hv", color=COLOURS["elr"], dash="dot")),
                          row=isr_row, col=1)
        if min_isr:
            axis = "" if isr_row == 1 else str(isr_row)
            lines.append(dict(type="line", xref=f"x{axis} domain", x0=0, x1=1, yref=f"y{axis}", y0=min_isr,
                              y1=min_isr, line=dict(color="#c62828", dash="dash", width=1)))
            line_labels.append(dict(xref=f"x{axis} domain", x=1, xanchor="right", yref=f"y{axis}", y=min_isr,
                                    yanchor="top", text=f"min.insync.replicas={min_isr}", showarrow=False,
                                    font=dict(size=10, color="#c62828")))
        here = lost[lost["partition"].astype("Int64") == s.partition] if len(lost) else lost
        if len(here):
            fig.add_trace(go.Scatter(x=here["t_s"].to_numpy(dtype=float),
                                     y=np.full(len(here), (replication_factor or 3) + 0.4), mode="markers",
                                     name="lost write (ack time)", showlegend=not lost_in_legend, legendgroup="lost",
                                     marker=dict(symbol="x", color="#c62828", size=8),
                                     customdata=here["offset"].astype(str).to_numpy(),
                                     hovertemplate="lost offset %{customdata}<extra></extra>"),
                          row=isr_row, col=1)
            lost_in_legend = True
        axis = "" if leader_row == 1 else str(leader_row)
        for p, t0, t1, kind in bands:
            if p == s.partition:
                (y0, y1), colour, _ = AVAILABILITY_BANDS[kind]
                lines.append(dict(type="rect", xref=f"x{axis}", x0=t0, x1=t1, yref=f"y{axis} domain", y0=y0, y1=y1,
                                  fillcolor=colour, line=dict(width=0), layer="above"))
        axes[f"yaxis{'' if leader_row == 1 else leader_row}"] = dict(
            tickvals=[-1] + brokers, ticktext=["none"] + [str(b) for b in brokers],
            range=[-1.5, max(brokers + [1]) + 0.5])
        axes[f"yaxis{isr_row}"] = dict(range=[0, (replication_factor or 3) + 0.8], dtick=1)
    fault_legend(fig, windows)
    for kind in dict.fromkeys(k for _, _, _, k in bands):
        _, colour, name = AVAILABILITY_BANDS[kind]
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name, hoverinfo="skip",
                                 marker=dict(symbol="square", size=12, color=colour)), row=1, col=1)
    shapes, labels = fault_shapes(windows)
    fig.update_layout(**axes)
    add_decorations(fig, shapes + lines, labels + line_labels)
    _base_layout(fig, 120 + 150 * rows, "Leader and ISR per partition")
    fig.update_layout(hovermode="closest")
    fig.update_xaxes(title_text="seconds since start", row=rows, col=1)
    return fig


def lost_per_partition_figure(lost_rows: list[dict]) -> go.Figure:
    """Lost writes per partition, split into violations and losses the model allows."""
    partitions = [f"p{r['partition']}" for r in lost_rows]
    violation = np.array([r["violation"] for r in lost_rows])
    allowed = np.array([r["count"] for r in lost_rows]) - violation
    fig = go.Figure([
        go.Bar(x=partitions, y=violation, name="violation", marker_color="#c62828"),
        go.Bar(x=partitions, y=allowed, name="allowed by the model", marker_color="#ef9a9a"),
    ])
    _base_layout(fig, 300, "Lost acked writes per partition")
    fig.update_layout(barmode="stack", hovermode="x")
    fig.update_yaxes(title_text="lost writes", rangemode="tozero")
    return fig
