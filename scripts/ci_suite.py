"""The nightly's last steps, on the standard library alone (no cluster, no Spark):

    python scripts/ci_suite.py junit OUT.xml SHARD.xml...   one JUnit file from every shard's
    python scripts/ci_suite.py summary VERDICTS.json        the job summary (Markdown) from `kafka-chaos check --json`
"""
from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

COUNTS = ("tests", "failures", "errors", "skipped")
STATUS_MARK = {"valid": "✅ valid", "invalid": "❌ invalid", "incomplete": "⚠️ no verdict",
               "unusable": "⚠️ unreadable"}


def merge_junit(out: Path, inputs: list[Path]) -> dict[str, int]:
    """Every <testsuite> of the inputs under one <testsuites>, with the totals; unreadable inputs are named in a
    suite of their own as an error, not dropped."""
    root = ET.Element("testsuites", name="nightly-chaos")
    totals = dict.fromkeys(COUNTS, 0)
    time_s = 0.0
    for path in sorted(inputs):
        try:
            tree = ET.parse(path).getroot()
            suites = [tree] if tree.tag == "testsuite" else list(tree.iter("testsuite"))
        except (ET.ParseError, OSError) as e:
            broken = ET.SubElement(root, "testsuite", name=str(path), tests="1", errors="1", failures="0", skipped="0")
            case = ET.SubElement(broken, "testcase", classname="junit", name=path.name)
            ET.SubElement(case, "error", message=f"unreadable JUnit file: {e}")
            totals["tests"] += 1
            totals["errors"] += 1
            continue
        for suite in suites:
            root.append(suite)
            for key in COUNTS:
                totals[key] += int(suite.get(key, 0))
            time_s += float(suite.get("time", 0) or 0)
    for key, n in totals.items():
        root.set(key, str(n))
    root.set("time", f"{time_s:.3f}")
    out.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
    return totals


def _status(outcome: dict) -> str:
    """The verdict's status (valid, invalid, incomplete); a run the checker could not read is `unusable`."""
    return (outcome.get("verdict") or {}).get("status") or "unusable"


def summary(outcomes: list[dict]) -> str:
    """Markdown: the counts by status, then one row per run (violations first)."""
    by_status: dict[str, int] = {}
    for o in outcomes:
        by_status[_status(o)] = by_status.get(_status(o), 0) + 1
    lines = ["## Nightly chaos suite", "",
             f"{len(outcomes)} runs re-checked together on Spark: "
             + ", ".join(f"{n} {STATUS_MARK.get(s, s)}" for s, n in sorted(by_status.items())), "",
             "| run | verdict | violations | lost / lost_after_read | model disagreements |", "|---|---|---|---|---|"]
    order = {"invalid": 0, "incomplete": 1, "unusable": 2, "valid": 3}
    for o in sorted(outcomes, key=lambda o: (order.get(_status(o), 2), o.get("run_id") or "")):
        v = o.get("verdict") or {}
        anomalies = v.get("anomalies") or {}
        status = _status(o)
        verdict = STATUS_MARK.get(status, status) + (f" ({o['error']})" if o.get("error") else "")
        lines.append(f"| `{o.get('run_id')}` | {verdict} | {len(v.get('violations') or [])} | "
                     f"{anomalies.get('lost', 0)} / {anomalies.get('lost_after_read', 0)} | "
                     f"{len(v.get('model_disagreements') or [])} |")
    lines += ["", "The suite page is `results/index.html` in the `chaos-suite` artifact; each run's report is beside "
              "its results."]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "junit":
        totals = merge_junit(Path(argv[1]), [Path(p) for p in argv[2:]])
        print(f"{argv[1]}: " + ", ".join(f"{k} {v}" for k, v in totals.items()), file=sys.stderr)
        return 0
    if len(argv) == 2 and argv[0] == "summary":
        path = Path(argv[1])
        try:
            outcomes = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            sys.stdout.write(f"## Nightly chaos suite\n\nNo verdicts: {path} is unreadable ({e}).\n")
            return 0
        sys.stdout.write(summary(outcomes))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
