"""The real run shipped in tests/data, re-checked by the current checker: it keeps the verdict Kafka's rules give
its cell (leader-kill at acks=1, min ISR 2: losses possible, all allowed, valid, exit 0), its fault started and
healed, the model agrees with the cluster, and every allowed loss names its cause. No Docker: this runs everywhere."""
import json

from kafka_chaos.harness.cli import main
from tests.chaos.expected_cells import POSSIBLE, Profile, expected_cell
from tests.chaos.oracle import (
    assert_allowed_losses_name_causes,
    assert_faults_ran,
    assert_model_agreed,
    assert_outcome,
)
from tests.chaos.shipped_run import SHIPPED_ROOT, SHIPPED_RUN, copy_shipped
from tests.schemas import validate_run


def test_the_shipped_run_rechecked_keeps_its_cells_verdict_and_every_allowed_loss_names_its_cause(tmp_path):
    root = copy_shipped(tmp_path / "runs", report=False)
    run = root / SHIPPED_RUN
    code = main(["check", str(run), "--force", "--engine", "pandas"])
    verdict = json.loads((run / "verdict.json").read_text())
    cell = expected_cell("leader-kill", Profile("1", 2, False), "4.4.0")
    assert cell.loss == POSSIBLE
    assert_outcome(verdict, code, cell, run)
    assert_faults_ran(run, "leader-kill")
    assert_model_agreed(verdict, cell, run)
    assert_allowed_losses_name_causes(run)
    validate_run(run)
    stored = json.loads((SHIPPED_ROOT / SHIPPED_RUN / "verdict.json").read_text())
    assert verdict["anomalies"]["lost"] == stored["anomalies"]["lost"] > 0     # the checker still finds its losses
    assert verdict["violations"] == {} and verdict["counts"] == stored["counts"]


def test_the_shipped_run_is_small_and_holds_no_credentials():
    files = [f for f in SHIPPED_ROOT.rglob("*") if f.is_file()]
    assert sum(f.stat().st_size for f in files) < 500_000
    for f in files:
        if f.suffix in (".json", ".log"):
            text = f.read_text()
            assert "AWS_" not in text and "BEGIN " not in text, f
            assert all(line.rstrip().endswith("= null") for line in text.splitlines()
                       if any(w in line.lower() for w in ("password =", "secret =", "secret.key =")))
