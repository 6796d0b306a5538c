"""The report's guarantee row of the replica audit (verdict.json `replica_audit`): held, violated with the count of
divergences, or unchecked for a run without the audit, read back from report.html (no browser)."""
from __future__ import annotations

import json

from kafka_chaos.report.page import write_report
from tests.report.page import visible_text


def shown(path, audit: dict | None) -> str:
    verdict = json.loads((path / "verdict.json").read_text())
    verdict.pop("replica_audit", None)
    if audit is not None:
        verdict["replica_audit"] = audit
    (path / "verdict.json").write_text(json.dumps(verdict))
    text = visible_text(write_report(path).read_text())
    return text[text.index("Replica logs (end-of-run audit)"):][:300]


def test_the_replica_audit_row_says_held_violated_or_not_audited(make_run):
    path = make_run()
    held = shown(path, {"ran": True, "isr_whole": True, "divergences": 0, "differences": 0})
    assert "ISR replicas identical below the high watermark" in held and "held" in held
    bad = shown(path, {"ran": True, "isr_whole": True, "divergences": 2, "differences": 1})
    assert "2 divergence(s) below the high watermark, 1 difference(s) reported, not judged" in bad
    assert "violated" in bad
    old = shown(path, None)
    assert "not audited: a verdict from before the audit" in old and "unchecked" in old
