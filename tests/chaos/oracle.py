"""Assertions that judge a real run against Kafka's rules (tests/chaos/expected_cells.py), not against its own
exit code alone: its faults ran, the model agreed with the cluster, the cell's outcome holds, and every allowed loss
names its cause."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from tests.chaos.expected_cells import NEVER, SCENARIOS, Cell

LOSS_KINDS = ("lost", "lost_after_read")


def assert_faults_ran(run_dir: Path, scenario: str) -> None:
    """Every fault of the run's plan (schedule.json) started and healed (faults.parquet), none failed to start
    (meta.json's fault_failures), and the plan holds only the scenario's own faults."""
    meta = json.loads((run_dir / "meta.json").read_text())
    assert not meta.get("fault_failures"), f"faults did not start in {run_dir}: {meta['fault_failures']}"
    planned = Counter(s["fault"] for s in json.loads((run_dir / "schedule.json").read_text())["steps"])
    assert planned, f"no fault planned in {run_dir}"
    assert set(planned) <= SCENARIOS[scenario].faults, f"{set(planned)} is not {scenario}'s in {run_dir}"
    faults = pq.read_table(run_dir / "history/faults.parquet", columns=["action", "fault"]).to_pandas()
    started = Counter(faults.loc[faults["action"] == "start", "fault"])
    healed = Counter(faults.loc[faults["action"] == "heal", "fault"])
    for fault, n in planned.items():
        assert started[fault] >= n and healed[fault] >= n, \
            f"{fault}: {n} planned, {started[fault]} started, {healed[fault]} healed in {run_dir}"


def assert_model_agreed(verdict: dict, cell: Cell, run_dir: Path) -> None:
    """The model's self-check: no disagreement with the cluster but those the cell lists, with their reasons."""
    known = {d.kind for d in cell.known_disagreements}
    unknown = [d for d in verdict.get("model_disagreements") or [] if d.get("kind") not in known]
    assert not unknown, f"the model disagreed with the cluster in {run_dir}: {unknown}"


def assert_allowed_losses_name_causes(run_dir: Path) -> None:
    """Every allowed lost / lost_after_read row of anomalies.parquet names its excuse and the event it blames."""
    rows = pq.read_table(run_dir / "anomalies.parquet").to_pandas()
    assert {"excuse", "cause_id"} <= set(rows.columns), f"anomalies.parquet without excuse columns in {run_dir}"
    allowed = rows[rows["kind"].isin(LOSS_KINDS) & (rows["classification"] == "allowed")]
    unnamed = allowed[allowed["excuse"].isna() | allowed["cause_id"].isna()]
    assert unnamed.empty, f"{len(unnamed)} allowed losses name no cause in {run_dir}: " \
                          f"{unnamed[['kind', 'partition', 'offset', 'reason']].head(3).to_dict('records')}"


def assert_outcome(verdict: dict, exit_code: int, cell: Cell, run_dir: Path) -> None:
    """The cell's verdict and exit code; in a NEVER cell no acknowledged write lost and the model predicting so."""
    where = f"in {run_dir} (expected: {cell.why})"
    assert verdict["valid"] is cell.valid and exit_code == cell.exit_code, \
        f"valid {verdict['valid']}, exit {exit_code}, violations {verdict['violations']} {where}"
    if cell.read_loss == NEVER:
        assert not verdict["anomalies"].get("lost_after_read", 0), f"records a consumer read were lost {where}"
    if cell.loss == NEVER:
        lost = {k: verdict["anomalies"].get(k, 0) for k in LOSS_KINDS}
        assert not any(lost.values()), f"acknowledged writes lost: {lost} {where}"
        assert verdict["predicted"]["lost"] == NEVER, f"the model predicted {verdict['predicted']['lost']} {where}"


def assert_cell(result, scenario: str, cell: Cell) -> None:
    """All of the above for one chaos run (a harness RunResult)."""
    run_dir, verdict = Path(result.run_dir), result.verdict
    assert verdict is not None, f"no verdict in {run_dir}"
    assert_faults_ran(run_dir, scenario)
    assert_model_agreed(verdict, cell, run_dir)
    assert_allowed_losses_name_causes(run_dir)
    assert_outcome(verdict, result.exit_code, cell, run_dir)
