"""What `run` prints at the end: a fault the schedule could not start is said out loud, not only kept in meta.json."""
import json

from kafka_chaos.harness.runner import RunResult, summary_lines


def verdict():
    return {"valid": True, "counts": {"sends": 10, "ok": 10, "fail": 0, "info": 0, "reads": 10},
            "anomalies": {"lost": 0, "lost_after_read": 0}, "predicted": {"lost": 0},
            "availability": {"longest_s": 0.0}, "model_disagreements": []}


def test_a_fault_that_did_not_start_is_a_warning_beside_the_verdict(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"fault_failures": [
        "follower-kill at 4.0s: cannot describe topic chaos: no broker answered metadata within 20 s"]}))
    lines = summary_lines(RunResult(tmp_path, 0, verdict(), None))
    assert "verdict: VALID" in lines
    assert lines[-1].startswith("WARNING: 1 scheduled fault(s) did not start") and "follower-kill at 4.0s" in lines[-1]


def test_a_run_whose_faults_all_started_prints_no_warning(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({}))
    assert not any("WARNING" in line for line in summary_lines(RunResult(tmp_path, 0, verdict(), None)))
