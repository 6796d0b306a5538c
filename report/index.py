"""The results index: ROOT/index.html, every run of a results root on one static, self-contained page.

One row per run (scenario, Kafka version, metadata mode, client, acks, min ISR, verdict, lost, stalls, a link to its
report), filters and sorting in a few lines of inline script, each configuration's verdicts over time (its trend,
and whether it flips between valid and invalid: flaky), and links to the suites' own pages. Every link is relative,
so the page works opened from disk, inside a downloaded CI artifact, or served (`kafka-chaos serve`).
It reads only meta.json and verdict.json of each run: quick for thousands of runs, and the same over an object store.
`kafka-chaos index ROOT` writes it; `kafka-chaos report --suite ROOT` writes it too after building missing reports.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from kafka_chaos.base.errors import HarnessError
from kafka_chaos.report.index_rows import STATES, IndexRow, local_row, locate_runs

INDEX_NAME = "index.html"
TEMPLATES = Path(__file__).parent / "templates"
PAGE = 100                 # rows drawn before "show all" (the rest are in the page, hidden: no layout cost)
TREND_LAST = 60            # squares drawn per configuration (the newest); the counts cover every run
FILTERS = (("suite", "suite"), ("scenario", "scenario"), ("kafka_version", "Kafka"), ("metadata_mode", "mode"),
           ("client", "client"), ("acks", "acks"), ("min_isr", "min ISR"), ("state", "verdict"))


@dataclass
class Trend:
    """One configuration's runs in time order."""

    scenario: str
    config: str                # Kafka version, mode, client, acks, min ISR
    keys: dict                 # the filter values that select it
    states: list[str]          # oldest first
    titles: list[str]
    valid: int
    invalid: int
    other: int
    flips: int                 # valid <-> invalid changes between consecutive judged runs

    @property
    def flaky(self) -> bool:
        return self.valid > 0 and self.invalid > 0

    @property
    def shown(self) -> list[tuple[str, str]]:
        return list(zip(self.states, self.titles))[-TREND_LAST:]


def template_environment() -> jinja2.Environment:
    """report/templates, without importing the report page's plotting modules (the index stays quick to load)."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def trends(rows: list[IndexRow]) -> list[Trend]:
    """Each configuration's verdicts over time, flaky ones first, then those with invalid runs."""
    groups: dict[tuple, list[IndexRow]] = {}
    for r in rows:
        groups.setdefault((r.scenario, r.kafka_version, r.metadata_mode, r.client, r.acks, r.min_isr), []).append(r)
    out = []
    for (scenario, version, mode, client, acks, min_isr), runs in groups.items():
        runs = sorted(runs, key=lambda r: (r.start_ns, r.run_id))
        judged = [r.state for r in runs if r.state in ("valid", "invalid")]
        out.append(Trend(
            scenario=scenario, config=f"Kafka {version} · {mode} · {client} · acks={acks} · min ISR {min_isr}",
            keys={"scenario": scenario, "kafka_version": version, "metadata_mode": mode, "client": client,
                  "acks": acks, "min_isr": min_isr},
            states=[r.state for r in runs],
            titles=[f"{r.run_id}: {r.verdict} ({r.started or 'start unknown'})" for r in runs],
            valid=judged.count("valid"), invalid=judged.count("invalid"), other=len(runs) - len(judged),
            flips=sum(a != b for a, b in zip(judged, judged[1:]))))
    return sorted(out, key=lambda t: (not t.flaky, t.invalid == 0, t.scenario, t.config))


def filter_options(rows: list[IndexRow]) -> list[tuple[str, str, list[str]]]:
    """(field, label, distinct values) per filter; versions in version order; the suite filter only with suites."""
    out = []
    for key, label in FILTERS:
        values = {getattr(r, key) for r in rows}
        if key == "suite" and values <= {""}:
            continue
        out.append((key, label, sorted(values, key=_version_key if key == "kafka_version" else str)))
    return out


def _version_key(v: str) -> tuple:
    return tuple(int(p) if p.isdigit() else -1 for p in v.split(".")) if v else ()


def render_index(title: str, rows: list[IndexRow], suites: list[tuple[str, str | None]],
                 generator: str = "kafka-chaos index") -> str:
    """The page for these rows; `suites` is (name, href of its page or None)."""
    rows = sorted(rows, key=lambda r: (-r.start_ns, r.suite, r.run_id))
    summary = {state: sum(r.state == state for r in rows) for state in STATES}
    data = [{k: getattr(r, k) for k, _ in FILTERS} | {"run_id": r.run_id} for r in rows]
    return template_environment().get_template("index.html.j2").render(
        root=title, rows=rows, summary=summary, suites=suites, trends=trends(rows),
        filters=filter_options(rows), has_suites=bool(suites), trend_last=TREND_LAST, page=PAGE, generator=generator,
        data=Markup(json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")),
        generated=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


def write_index(root: Path | str, overrides: dict[str, tuple[str, str]] | None = None,
                generator: str = "kafka-chaos index") -> Path:
    """Writes ROOT/index.html and returns its path. `overrides`: run id -> (state, verdict text) shown instead
    (the suite's failed reports)."""
    root = Path(root)
    if not root.is_dir():
        raise HarnessError(f"{root} is not a directory", "pass the directory holding the results directories")
    located, suite_names = locate_runs(root)
    rows = [local_row(root, x) for x in located]
    for row in rows:
        if row.run_id in (overrides or {}):
            row.state, row.verdict = overrides[row.run_id]
    suites = [(name, f"{quote(name)}/{INDEX_NAME}" if (root / name / INDEX_NAME).is_file() else None)
              for name in suite_names]
    index = root / INDEX_NAME
    partial = root / f".{INDEX_NAME}.{os.getpid()}.partial"      # a reader (serve, a browser) sees old or new whole
    partial.write_text(render_index(root.name or str(root), rows, suites, generator), encoding="utf-8")
    os.replace(partial, index)
    return index
