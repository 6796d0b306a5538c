"""The report's stall table: each stall beside whose time it was (verdict.json `stall_causes`, checkers/stall_cause.py),
for the run as a whole and, with several client libraries, per client side by side."""
from __future__ import annotations

from dataclasses import dataclass, field

from kafka_chaos.report.data import RunData


@dataclass
class StallRow:
    partition: int
    start_s: float
    seconds: float
    cluster_s: float | None          # None: the verdict predates the attribution
    client_s: float | None
    unexplained_s: float | None
    causes: list[str] = field(default_factory=list)     # "4.0 s cluster: no reachable leader", ...


@dataclass
class StallTable:
    title: str
    rows: list[StallRow]
    summary: str


def _rows(stalls: list, causes: list, start_ns: int) -> list[StallRow]:
    out = []
    for i, s in enumerate(stalls):
        c = causes[i] if i < len(causes) else None
        row = StallRow(int(s[2]), (int(s[0]) - start_ns) / 1e9, (int(s[1]) - int(s[0])) / 1e9, None, None, None)
        if c:
            row.cluster_s, row.client_s, row.unexplained_s = c["cluster_s"], c["client_s"], c["unexplained_s"]
            row.causes = [f"{x['seconds']:.1f} s {x['cause']}: {x['mechanism']}" for x in c["causes"]]
        out.append(row)
    return out


def _summary(attribution: dict | None) -> str:
    if not attribution:
        return "Not attributed: this verdict predates the stall attribution; check the run again."
    text = (f"cluster {attribution['cluster_s']:.1f} s, client {attribution['client_s']:.1f} s, unexplained "
            f"{attribution['unexplained_s']:.1f} s")
    return text if attribution.get("statistics") else text + " (no client statistics in this history)"


def stall_tables(run: RunData) -> list[StallTable]:
    """The run's stall table, then one per client library when the verdict compares several."""
    verdict = run.verdict or {}
    avail = verdict.get("availability") or {}
    tables = []
    if avail.get("stalls"):
        tables.append(StallTable("all producers", _rows(avail["stalls"], avail.get("stall_causes") or [],
                                                        run.start_ns), _summary(avail.get("attribution"))))
    clients = verdict.get("clients") or {}
    if len(clients) > 1:
        for name, c in clients.items():
            tables.append(StallTable(f"{c.get('library', name)} ({', '.join(c.get('producers') or [])})",
                                     _rows(c.get("stalls") or [], c.get("stall_causes") or [], run.start_ns),
                                     _summary(c.get("attribution"))))
    return tables
