"""The version matrix's comparison page: one scenario and seed run on several Kafka releases, one row per release
(release x metadata mode x verdict x lost x model disagreements, and the release rules the model judged by).

Reads only each run's meta.json and verdict.json. Writes `index.html` (linking every run's report) and
`comparison.md` (the same table, for a README or a CI summary) into the matrix's directory.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

from kafka_chaos.history.meta import read_meta_dict

_SHORT_RULES = {"leader_epoch_truncation": "KIP-101", "epoch_end_offset_for_older_epochs": "KIP-279",
                "fetch_carries_leader_epoch": "KIP-320", "session_defaults_kip537": "KIP-537",
                "isr_change_through_controller": "KIP-497", "unclean_election_in_kraft": "KRaft unclean",
                "unclean_election_in_zookeeper": "ZK unclean", "eligible_leader_replicas": "ELR",
                "zookeeper_controller": "ZK controller", "last_known_leader": "last known leader",
                "one_stale_broker_fenced_at_a_time": "stalest fenced first"}


@dataclass
class MatrixRow:
    release: str
    metadata: str
    verdict: str
    lost: int | None
    lost_after_read: int | None
    model_lost: str
    disagreements: int | None
    rules: str
    run_dir: Path


def _verdict_word(v: dict | None) -> str:
    if not v:
        return "no verdict (not checked)"
    if v.get("valid") is None:
        return "no verdict"
    if v.get("valid"):
        return "valid"
    return "violation: " + ", ".join(f"{k}={n}" for k, n in (v.get("violations") or {}).items())


def matrix_row(run_dir: Path) -> MatrixRow:
    meta = read_meta_dict(run_dir) or {}
    path = run_dir / "verdict.json"
    v = json.loads(path.read_text()) if path.exists() else None
    model = (v or {}).get("model") or {}
    rules = [r["rule"] for r in model.get("release_rules") or [] if r.get("modelled", True)]
    return MatrixRow(
        release=str(meta.get("kafka_version", "?")), metadata=str(meta.get("metadata_mode") or "kraft"),
        verdict=_verdict_word(v), lost=(v or {}).get("anomalies", {}).get("lost"),
        lost_after_read=(v or {}).get("anomalies", {}).get("lost_after_read"),
        model_lost=str(((v or {}).get("predicted") or {}).get("lost", "-")),
        disagreements=len(v.get("model_disagreements") or []) if v else None,
        rules=", ".join(_SHORT_RULES.get(r, r) for r in rules), run_dir=run_dir)


HEADER = ("release", "metadata", "verdict", "lost (acked, not read back)", "lost after read",
          "model: acked loss", "model disagreements", "release rules the model applied")


def _cells(r: MatrixRow) -> tuple:
    dash = "-"
    return (r.release, r.metadata, r.verdict, dash if r.lost is None else r.lost,
            dash if r.lost_after_read is None else r.lost_after_read, r.model_lost,
            dash if r.disagreements is None else r.disagreements, r.rules)


def markdown(rows: list[MatrixRow]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(str(c) for c in _cells(r)) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_comparison(run_dirs: list[Path], out_dir: Path, title: str) -> Path:
    """index.html and comparison.md for the runs in `run_dirs` (one per release, in the order given)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [matrix_row(Path(d)) for d in run_dirs]
    (out_dir / "comparison.md").write_text(f"{title}\n\n{markdown(rows)}")
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in _cells(r))
        + f'<td><a href="{html.escape(_relative(r.run_dir / "report.html", out_dir))}">report</a></td></tr>\n'
        for r in rows)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER + ("",))
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><table><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>"
            "<p>lost: acknowledged writes no read found. The model judges each against the rules of its release; "
            "a loss the model predicts (acks=1 failover, unclean election) is not a violation.</p></body></html>")
    index = out_dir / "index.html"
    index.write_text(page)
    return index


def _relative(target: Path, base: Path) -> str:
    import os

    return os.path.relpath(target, base)
