"""A soak's page, soak.html: the running verdict over time, window by window, rewritten after every window.

Reads only the soak's soak.json (harness/soak.py writes it) and links each window's own report where its history
was kept. The page is plain HTML with an inline SVG strip (no script), so a partial report opened mid-soak, or
offline from a CI artifact, shows the same thing: per window its own verdict, the verdict so far after it, and the
memory of the soak process and of its largest workload process.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

SOAK_PAGE = "soak.html"
COLOURS = {"valid": "#2e7d32", "violation": "#c62828", "no verdict": "#9e9e9e"}


@dataclass(frozen=True)
class WindowRow:
    index: int
    started: str
    seconds: float
    verdict: str            # this window's: valid, violation, no verdict
    so_far: str             # the running verdict after this window: valid, violation, no verdict
    kinds: str
    faults: str
    rss_mib: float
    workers_mib: float
    disk_mib: float
    report: Path | None     # the window's report.html when it has one
    rotated: bool           # its history was deleted (--keep-segments)


def _word(valid) -> str:
    return {True: "valid", False: "violation"}.get(valid, "no verdict")


def window_rows(soak: dict, root: Path) -> list[WindowRow]:
    rows, worst = [], "valid"
    for w in soak.get("windows") or []:
        verdict = _word(w.get("valid"))
        if verdict == "violation" or (verdict == "no verdict" and worst == "valid"):
            worst = verdict
        window_dir = root / Path(w.get("run_dir") or f"w{int(w['index']):04d}").name     # windows live in root
        report = window_dir / "report.html"
        rows.append(WindowRow(int(w["index"]), str(w.get("started", "")), float(w.get("seconds") or 0), verdict,
                              worst, ", ".join(w.get("kinds") or []) or "-", ", ".join(w.get("faults") or []) or "-",
                              float(w.get("rss_mib") or 0), float(w.get("children_max_rss_mib") or 0),
                              float(w.get("disk_mib") or 0), report if report.is_file() else None,
                              not (window_dir / "history").exists()))
    return rows


def strip_svg(rows: list[WindowRow], width: int = 900) -> str:
    """Two bands over time (each window as wide as it lasted): its own verdict, and the verdict so far."""
    total = sum(r.seconds for r in rows) or 1.0
    x, cells = 130.0, []
    for r in rows:
        w = max((width - 130) * r.seconds / total, 1.0)
        for y, word in ((8, r.verdict), (38, r.so_far)):
            cells.append(f'<rect x="{x:.1f}" y="{y}" width="{w - 1:.1f}" height="24" fill="{COLOURS[word]}">'
                         f"<title>window {r.index} ({r.started} UTC): {html.escape(word)}</title></rect>")
        cells.append(f'<text x="{x + 3:.1f}" y="78" font-size="11">{r.index}</text>')
        x += w
    labels = ('<text x="0" y="25" font-size="12">this window</text>'
              '<text x="0" y="55" font-size="12">verdict so far</text>'
              '<text x="0" y="78" font-size="11">window</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="86" role="img">'
            f'{labels}{"".join(cells)}</svg>')


HEADER = ("window", "started (UTC)", "s", "verdict", "verdict so far", "anomaly kinds", "faults", "soak RSS MiB",
          "largest worker RSS MiB", "disk MiB", "")


def write_soak_page(root: Path | str) -> Path:
    """soak.html next to soak.json."""
    root = Path(root)
    soak = json.loads((root / "soak.json").read_text())
    rows = window_rows(soak, root)
    state = "finished" if soak.get("done") else "running"
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
            r.index, r.started, f"{r.seconds:.0f}", r.verdict, r.so_far, r.kinds, r.faults, f"{r.rss_mib:.0f}",
            f"{r.workers_mib:.0f}", f"{r.disk_mib:.1f}"))
        + (f'<td><a href="{html.escape(str(r.report.relative_to(root)))}">report</a></td>' if r.report
           else f"<td>{'history rotated' if r.rotated else 'no report'}</td>") + "</tr>\n" for r in rows)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
    title = f"Soak {soak.get('soak_id', root.name)} ({state})"
    page = ("<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}</style>"
            f"</head><body><h1>{html.escape(title)}</h1>"
            f"<p><strong>Running verdict: {html.escape(str(soak.get('running_verdict', '')))}</strong></p>"
            f"<p>Planned {float(soak.get('duration_s') or 0) / 3600:.2f} h in windows of "
            f"{float(soak.get('window_s') or 0):.0f} s, seed {html.escape(str(soak.get('seed')))}. Each window is a "
            "whole run with its own topic; green valid, red a violation, grey no verdict.</p>"
            f"{strip_svg(rows)}<table><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>"
            "</body></html>")
    out = root / SOAK_PAGE
    out.write_text(page)
    return out
