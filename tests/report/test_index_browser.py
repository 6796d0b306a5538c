"""The results index in Debian's headless chromium: filters (by version and verdict, kept in the address), the
trend's "show runs", sorting, every link resolving from a copy of the root elsewhere (a downloaded artifact), and a
1,000-run root loading without an error (its seconds of DOM work are a benchmark: bench/index_dom_work.py)."""
from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from kafka_chaos.report.browser import BrowserOptions, HeadlessChromium
from kafka_chaos.report.index import write_index
from tests.report.index_roots import write_many

pytestmark = pytest.mark.browser
RENDERED = "document.body.dataset.renderedMs"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "report"
VISIBLE = "Array.from(document.querySelectorAll('#runs tbody tr')).filter(r => !r.hidden)"


@pytest.fixture(scope="module")
def browser():
    options = BrowserOptions(width=1600)
    if not (Path(options.executable).is_file() or shutil.which(options.executable)):
        pytest.skip(f"{options.executable} is not installed (scripts/setup.sh installs Debian's chromium)")
    with HeadlessChromium(options) as b:
        b.send("Performance.enable")
        yield b


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    root = write_many(tmp_path_factory.mktemp("many") / "results", n=1000, nights=10)
    write_index(root)
    return root


def dom_work_s(browser) -> float:
    """Seconds chromium spent on script, style and layout for the page so far (its own metrics)."""
    metrics = {m["name"]: m["value"] for m in browser.send("Performance.getMetrics")["metrics"]}
    return metrics["ScriptDuration"] + metrics["RecalcStyleDuration"] + metrics["LayoutDuration"]


def choose(browser, key: str, value: str) -> None:
    browser.evaluate(f"""(function () {{ var s = document.querySelector('select[data-filter="{key}"]');
        s.value = {value!r}; s.dispatchEvent(new Event('change')); }})()""")


def test_a_thousand_runs_load_without_errors_and_draw_the_newest_hundred(browser, many):
    load = browser.open((many / "index.html").as_uri(), RENDERED)
    assert load.console_errors == [] and load.network_requests() == []
    assert browser.evaluate("document.querySelectorAll('#runs tbody tr').length") == 1000
    assert browser.evaluate(f"{VISIBLE}.length") == 100      # the newest 100 drawn, the rest one click away
    browser.screenshot(ARTIFACTS / "index-1000.png", full_page=False)
    assert "the first 100 of 1000" in browser.evaluate("document.getElementById('shown').innerText")
    browser.evaluate("document.getElementById('show-all').click()")
    assert browser.evaluate(f"{VISIBLE}.length") == 1000
    assert browser.evaluate("document.getElementById('show-all').hidden") is True


def test_filters_by_version_and_verdict_narrow_the_rows_and_live_in_the_address(browser, many):
    browser.open((many / "index.html").as_uri(), RENDERED)
    choose(browser, "kafka_version", "4.0.0")
    versions = browser.evaluate(f"{VISIBLE}.map(r => r.cells[3].innerText)")
    assert versions and set(versions) == {"4.0.0"} and len(versions) < 1000
    choose(browser, "state", "invalid")
    rows = browser.evaluate(f"{VISIBLE}.map(r => [r.cells[2].innerText, r.cells[3].innerText, r.className])")
    assert rows and {tuple(r) for r in rows} == {("power-loss-leader", "4.0.0", "run invalid")}
    assert browser.evaluate("document.getElementById('shown').innerText") == f"{len(rows)} of 1000 runs shown"
    url = browser.evaluate("location.href")
    assert url.endswith("#kafka_version=4.0.0&state=invalid")
    browser.send("Page.navigate", url="about:blank")
    browser.open((many / "index.html").as_uri() + "#state=invalid", RENDERED)   # a bookmarked view
    assert browser.evaluate(f"{VISIBLE}.length") == len(browser.evaluate(
        "Array.from(document.querySelectorAll('#runs tbody tr.invalid'))"))
    browser.evaluate("document.getElementById('clear').click()")
    assert browser.evaluate(f"{VISIBLE}.length") == 100


def test_the_flaky_configuration_leads_the_trend_and_shows_its_runs(browser, many):
    browser.open((many / "index.html").as_uri(), RENDERED)
    first = browser.evaluate("document.querySelector('#trend tbody tr')")
    assert first is not None
    head = browser.evaluate("document.querySelector('#trend tbody tr').innerText")
    assert "power-loss-leader" in head and "flaky" in head and "acks=all" in head and "4.0.0" in head
    browser.evaluate("document.querySelector('#trend tbody tr .show-runs').click()")
    shown = browser.evaluate(f"{VISIBLE}.map(r => r.cells[2].innerText + ' ' + r.cells[3].innerText + ' ' + "
                             "r.cells[6].innerText)")
    assert shown and set(shown) == {"power-loss-leader 4.0.0 all"}
    assert browser.evaluate("document.querySelectorAll('#trend tbody tr.flaky').length") == 1


def test_sorting_by_a_column(browser, many):
    browser.open((many / "index.html").as_uri(), RENDERED)
    browser.evaluate("document.querySelectorAll('#runs th')[0].click()")
    order = browser.evaluate("Array.from(document.querySelectorAll('#runs tbody tr')).map(r => r.cells[0].textContent)")
    assert len(order) == 1000 and order == sorted(order)
    assert browser.evaluate(f"{VISIBLE}.length") == 100
    lost = browser.evaluate("Array.from(document.querySelectorAll('#runs th')).find(h => h.innerText.startsWith("
                            "'lost')).click()")
    assert lost is None
    top = browser.evaluate(f"{VISIBLE}.map(r => r.cells[9].textContent)")
    assert top[0].startswith("0 /") or top[0] == ""


def test_every_link_resolves_in_a_copy_of_the_root_elsewhere(browser, many, tmp_path):
    """As inside a downloaded CI artifact: the root copied to another place, opened from disk."""
    copy = shutil.copytree(many, tmp_path / "artifact" / "results")
    browser.open((copy / "index.html").as_uri(), RENDERED)
    hrefs = browser.evaluate("Array.from(document.querySelectorAll('a')).map(a => a.href)")
    assert len(hrefs) == 1000 + 10             # every run's report, every suite's page
    paths = [Path(unquote(urlparse(h).path)) for h in hrefs]
    assert all(p.is_file() and copy in p.parents for p in paths)
    report = browser.evaluate("document.querySelector('#runs a').href")
    load = browser.open(report, "document.readyState === 'complete'")
    assert load.console_errors == []
    assert browser.evaluate("document.querySelector('h1').innerText") == Path(urlparse(report).path).parent.name
