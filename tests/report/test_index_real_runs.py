"""The results index of a root holding the stored real runs (KAFKA_CHAOS_REAL_RUNS, by default /work/realruns/r; their
meta.json, verdict.json, report.html and sends copied as a suite of their own; where the machine has none, the run
shipped in tests/data) beside a synthetic 1,000-run root, in Debian's headless chromium: one row each, the version
and verdict filters finding exactly the real runs, and from a copy of the root elsewhere (a downloaded CI artifact)
every link resolving and every real run's report opening without an error."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from kafka_chaos.report.index import write_index
from tests.chaos.shipped_run import real_runs_root
from tests.report.index_roots import write_many
from tests.report.test_index_browser import RENDERED, VISIBLE, browser, choose, dom_work_s  # noqa: F401

pytestmark = pytest.mark.browser
SUITE = "real-runs"
COPIED = ("meta.json", "verdict.json", "report.html", "history/sends.parquet")     # what the index and links need


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> list[Path]:
    """The machine's stored real runs, else the one shipped in tests/data (a copy, its report written there)."""
    where = real_runs_root(tmp_path_factory.mktemp("shipped"))
    runs = sorted(p for p in where.iterdir() if all((p / f).is_file() for f in COPIED)) if where.is_dir() else []
    assert runs, f"no real runs with reports in {where} (KAFKA_CHAOS_REAL_RUNS)"
    return runs


@pytest.fixture(scope="module")
def root(real, tmp_path_factory) -> Path:
    root = write_many(tmp_path_factory.mktemp("mixed") / "results", n=1000, nights=10)
    for run in real:                                  # copies: the stored runs are only read
        (root / SUITE / run.name / "history").mkdir(parents=True)
        for name in COPIED:
            shutil.copy(run / name, root / SUITE / run.name / name)
    write_index(root / SUITE)                         # the suite's own page
    write_index(root)
    return root


def test_real_and_synthetic_runs_load_side_by_side_one_row_each(browser, real, root):  # noqa: F811
    # the page's DOM-work budget is bench/index_dom_work.py's (--real-runs), not a test's
    browser.open((root / "index.html").as_uri(), RENDERED)
    assert browser.evaluate("document.querySelectorAll('#runs tbody tr').length") == 1000 + len(real)


def test_filters_by_version_and_verdict_find_exactly_the_real_runs(browser, real, root):  # noqa: F811
    browser.open((root / "index.html").as_uri(), RENDERED)
    choose(browser, "kafka_version", "4.4.0")                        # the real runs' release, none of the others'
    shown = browser.evaluate(f"{VISIBLE}.map(r => [r.cells[0].innerText, r.cells[1].innerText])")
    assert sorted(shown) == sorted([r.name, SUITE] for r in real)
    states = {json.loads((r / "verdict.json").read_text())["status"] for r in real}
    choose(browser, "state", "valid")
    valid = [r.name for r in real if json.loads((r / "verdict.json").read_text())["status"] == "valid"]
    assert sorted(browser.evaluate(f"{VISIBLE}.map(r => r.cells[0].innerText)")) == sorted(valid)
    choose(browser, "state", "invalid")
    assert browser.evaluate(f"{VISIBLE}.length") == sum(
        json.loads((r / "verdict.json").read_text())["status"] == "invalid" for r in real)
    assert browser.evaluate("location.href").endswith("#kafka_version=4.4.0&state=invalid")
    assert states <= {"valid", "invalid"}


def test_in_a_downloaded_artifact_every_link_resolves_and_the_real_reports_open(browser, real, root,  # noqa: F811
                                                                                tmp_path):
    copy = shutil.copytree(root, tmp_path / "artifact" / "results")
    browser.open((copy / "index.html").as_uri() + "#suite=" + SUITE, RENDERED)
    hrefs = browser.evaluate("Array.from(document.querySelectorAll('a')).map(a => a.href)")
    paths = [Path(unquote(urlparse(h).path)) for h in hrefs]
    assert len(paths) == 1000 + len(real) + 10 + 1            # every run's report, every suite's page
    assert all(p.is_file() and copy in p.parents for p in paths)
    reports = [h for h in hrefs if f"/{SUITE}/" in h and h.endswith("/report.html")]
    assert len(reports) == len(real)
    for href in reports:
        load = browser.open(href, "document.readyState === 'complete'")
        assert load.console_errors == [], href
        assert Path(urlparse(href).path).parent.name in browser.evaluate("document.querySelector('h1').innerText")
