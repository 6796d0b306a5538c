"""The report's table of model disagreements (verdict.json `model_disagreements`): where what the cluster visibly did
and what the ISR model predicted part, each a question for the model or the cluster rather than a verdict on Kafka.
A `leader_mismatch` row names the broker the cluster elected, those the model's replays elected near it (or the
leader the model kept), and the candidates the model had, so the row can be checked against the node logs."""
from __future__ import annotations

from kafka_chaos.report.data import RunData

MAX_ROWS = 100


def disagreement_rows(run: RunData) -> list[dict]:
    """One row per disagreement (the first MAX_ROWS), times in seconds from the run's start."""
    rows = []
    for d in ((run.verdict or {}).get("model_disagreements") or [])[:MAX_ROWS]:
        t_s = d.get("t_s")
        if t_s is None:
            t_s = (int(d["t_ns"]) - run.start_ns) / 1e9 if d.get("t_ns") is not None else None
        where = d.get("partition") if d.get("partition") is not None else f"broker {d.get('broker')}"
        rows.append({"time": "?" if t_s is None else f"{float(t_s):.1f} s", "partition": where,
                     "kind": d.get("kind", "?"), "detail": d.get("detail", ""), **_leader_columns(d)})
    return rows


def _leader_columns(d: dict) -> dict:
    """Who the cluster elected, who the model did, and the model's candidates; empty for other kinds."""
    if d.get("kind") != "leader_mismatch":
        return {"cluster": "", "model": "", "candidates": ""}
    t = int(d["t_ns"])
    model = "; ".join(f"broker {c['broker']} {c.get('how', '')} ({(int(c['t_ns']) - t) / 1e9:+.1f} s, "
                      f"{' and '.join(c.get('replays') or [])})" for c in d.get("model_elected") or [])
    if not model:
        kept = d.get("model_leader")
        model = f"nobody nearby (kept {'no leader' if kept is None else f'broker {kept}'})"
    cand = d.get("candidates") or {}
    return {"cluster": f"broker {d.get('cluster_leader')}", "model": model,
            "candidates": f"ISR {cand.get('isr', [])}, ELR {cand.get('elr', [])}, fenced {cand.get('fenced', [])}"}
