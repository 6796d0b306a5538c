"""The report's table of model disagreements: an elected-leader mismatch with both brokers, its time and the model's
candidates, read back from report.html (no browser)."""
from __future__ import annotations

import json

from kafka_chaos.report.page import write_report
from tests.report.page import parse, visible_text


def mismatch(start_ns: int) -> dict:
    """A leader_mismatch as `kafka-chaos check` writes it (checkers/model/elections.py)."""
    t = start_ns + 19 * 10**9
    return {"kind": "leader_mismatch", "partition": 0, "t_ns": t, "t_s": 19.0, "cluster_leader": 3,
            "cluster_previous": 1, "cluster_how": "from the ISR", "model_leader": 1,
            "model_elected": [{"broker": 2, "t_ns": t + 500_000_000, "how": "from the ISR",
                               "replays": ["recorded", "late"]}],
            "candidates": {"isr": [2, 3], "elr": [], "fenced": [1]},
            "detail": "the cluster elected broker 3 leader of partition 0 (after broker 1, from the ISR); the "
                      "model's replays elected broker 2 from the ISR at +0.5 s from it"}


def test_a_leader_mismatch_is_shown_with_both_brokers_the_time_and_the_candidates(make_run):
    path = make_run()
    verdict = json.loads((path / "verdict.json").read_text())
    start = json.loads((path / "meta.json").read_text()).get("start_ns") or 0
    verdict["model_disagreements"] = [mismatch(start)]
    (path / "verdict.json").write_text(json.dumps(verdict))
    html = write_report(path).read_text()
    assert "disagreements" in parse(html).ids
    text = visible_text(html)
    assert "Model against the cluster" in text and "1 disagreement(s)" in text
    row = text[text.index("19.0 s"):]
    for shown in ("leader_mismatch", "broker 3", "broker 2 from the ISR (+0.5 s, recorded and late)",
                  "ISR [2, 3], ELR [], fenced [1]", "the cluster elected broker 3"):
        assert shown in row


def test_a_run_without_disagreements_has_no_table(make_run):
    html = write_report(make_run()).read_text()
    assert "disagreements" not in parse(html).ids
