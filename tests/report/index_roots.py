"""Synthetic results roots for the index's tests: many runs' meta.json and verdict.json, as a checker writes them.

Only what the index reads is written (meta.json, verdict.json, a placeholder history/sends.parquet, and optionally a
report.html), so a 1,000-run root takes a second to make.
"""
from __future__ import annotations

import json
from pathlib import Path

VERSIONS = ("3.9.1", "4.0.0", "4.1.0")
SCENARIOS = ("leader-kill", "follower-kill", "partition-leader", "power-loss-leader", "controller-kill")
DAY_NS = 86_400 * 10**9
T0 = 1_795_000_000 * 10**9


def write_run(run_dir: Path, *, scenario: str = "leader-kill", version: str = "4.1.0", acks: str = "all",
              min_isr: int = 2, state: str = "valid", start_ns: int = T0, client: str = "librdkafka",
              mode: str = "kraft", lost: int = 0, report: bool = True) -> Path:
    (run_dir / "history").mkdir(parents=True, exist_ok=True)
    (run_dir / "history" / "sends.parquet").write_bytes(b"")
    meta = {"run_id": run_dir.name, "scenario": scenario, "kafka_version": version, "metadata_mode": mode,
            "partitions": 3, "replication_factor": 3, "min_insync_replicas": min_isr, "start_ns": start_ns,
            "end_ns": start_ns + 60 * 10**9, "clients": {client: {"library": client}},
            "producers": [{"name": "p0", "acks": acks, "idempotent": acks == "all", "client": client}]}
    (run_dir / "meta.json").write_text(json.dumps(meta))
    if state != "unchecked":
        invalid = state == "invalid"
        verdict = {"run_id": run_dir.name, "valid": None if state == "incomplete" else not invalid, "status": state,
                   "violations": {"lost": lost} if invalid else {},
                   "anomalies": {"lost": lost, "stall": 3}, "counts": {"sends": 120_000},
                   "observed": {"lost": lost, "duplicate": 0}, "predicted": {"lost": "never", "duplicates": "never"},
                   "availability": {"longest_s": 4.5}}
        if state == "incomplete":
            verdict["incomplete"] = {"run": ["the final drain did not finish"]}
        (run_dir / "verdict.json").write_text(json.dumps(verdict))
    if report:
        (run_dir / "report.html").write_text(f"<!DOCTYPE html><title>{run_dir.name}</title><h1>{run_dir.name}</h1>")
    return run_dir


def write_many(root: Path, n: int = 1000, nights: int = 10) -> Path:
    """n runs over `nights` suites (night-00 ...), every scenario x version x acks; one configuration flaky."""
    per_night = n // nights
    for night in range(nights):
        suite = root / f"night-{night:02d}"
        for i in range(per_night):
            k = night * per_night + i
            scenario, version = SCENARIOS[i % len(SCENARIOS)], VERSIONS[(i // len(SCENARIOS)) % len(VERSIONS)]
            acks = "all" if (i // 15) % 2 == 0 else "1"
            flaky = scenario == "power-loss-leader" and version == "4.0.0" and acks == "all"
            state = "invalid" if flaky and (night + i) % 3 == 0 else ("unchecked" if k % 97 == 0 else "valid")
            write_run(suite / f"2026{night:02d}T{i:04d}-{scenario}-s{k}", scenario=scenario, version=version,
                      acks=acks, state=state, start_ns=T0 + night * DAY_NS + i * 10**9, lost=2 if state == "invalid"
                      else 0)
        (suite / "index.html").write_text(f"<!DOCTYPE html><title>{suite.name}</title>")
    return root
