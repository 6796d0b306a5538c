"""The table of real runs in docs/findings.md: scenario x profile x version -> predicted loss, observed loss, model
disagreements, verdict, read from checked results directories.

    .venv/bin/python bench/verdict_table.py results/          # every checked run under a results root
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def profile(meta: dict) -> str:
    p = (meta.get("producers") or [{}])[0]
    unclean = " unclean" if meta.get("unclean_leader_election") else ""
    return f"acks={p.get('acks')} minISR={meta.get('min_insync_replicas')}{unclean}"


def row(run: Path) -> dict | None:
    verdict_file, meta_file = run / "verdict.json", run / "meta.json"
    if not verdict_file.is_file() or not meta_file.is_file():
        return None
    v, m = json.loads(verdict_file.read_text()), json.loads(meta_file.read_text())
    a = v.get("anomalies") or {}
    kinds = sorted({d.get("kind", "?") for d in v.get("model_disagreements") or []})
    status = v.get("status") or ("valid" if v.get("valid") else "invalid")
    return {
        "scenario": m.get("scenario"), "profile": profile(m), "version": m.get("kafka_version"),
        "predicted": (v.get("predicted") or {}).get("lost"),
        "lost": f"{a.get('lost', 0)} / {a.get('lost_after_read', 0)}",
        "stall": f"{(v.get('availability') or {}).get('longest_s', 0):.0f} s",
        "disagreements": f"{len(v.get('model_disagreements') or [])}" + (f" ({', '.join(kinds)})" if kinds else ""),
        "verdict": status + (" " + ", ".join(f"{k}={n}" for k, n in (v.get("violations") or {}).items())
                             if v.get("violations") else ""),
        "run": run.name,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("roots", nargs="+", type=Path)
    args = ap.parse_args()
    rows = [r for root in args.roots for run in sorted(root.iterdir()) if run.is_dir() and (r := row(run))]
    rows.sort(key=lambda r: (r["scenario"] or "", r["profile"], r["version"] or ""))
    cols = ["scenario", "profile", "version", "predicted", "lost", "stall", "disagreements", "verdict"]
    heads = ["scenario", "profile", "version", "predicted loss", "lost / lost_after_read", "longest stall",
             "model disagreements", "verdict"]
    print("| " + " | ".join(heads) + " |")
    print("|" + "---|" * len(heads))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
