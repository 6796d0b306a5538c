"""The report and the suite page in a real browser: Debian's headless chromium, driven over the DevTools pipe.

Each test asserts what a reader would see (the verdict, drawn plots) and what must not happen (console errors,
requests leaving the page). Screenshots go to test-artifacts/report/ (git-ignored) and into the pytest-html report.
"""
from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest

from kafka_chaos.report.browser import BrowserOptions, HeadlessChromium
from kafka_chaos.report.suite import write_suite

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "report"
RENDERED = "document.body.dataset.renderedMs"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def browser():
    options = BrowserOptions()
    if not (Path(options.executable).is_file() or shutil.which(options.executable)):
        pytest.skip(f"{options.executable} is not installed (scripts/setup.sh installs Debian's chromium)")
    with HeadlessChromium(options) as b:
        yield b


def keep_screenshot(browser, name: str, request) -> Path:
    path = browser.screenshot(ARTIFACTS / f"{name}.png")
    assert path.read_bytes().startswith(PNG_MAGIC)
    try:
        import pytest_html
        extras = request.getfixturevalue("extras")
        extras.append(pytest_html.extras.png(base64.b64encode(path.read_bytes()).decode(), name))
    except (ImportError, pytest.FixtureLookupError):
        pass
    return path


def test_report_renders_the_verdict_and_every_plot_with_no_console_error_and_no_request(
        browser, shared_reports, request):
    path, _ = shared_reports["invalid"]
    assert (path / "report.html").stat().st_size < 1_500_000     # plotly's basic bundle inline: it must draw all
    url = (path / "report.html").as_uri()
    load = browser.open(url, RENDERED)
    assert browser.evaluate("document.querySelector('#verdict .title').innerText") == "Invalid: guarantees violated"
    plots = browser.evaluate("""Array.from(document.querySelectorAll('[data-figure]')).map(d => [d.id,
        d.querySelectorAll('.main-svg').length,
        d.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length])""")
    assert [p[0] for p in plots] == ["plot-timeline", "plot-partitions", "plot-lost"]
    assert all(svgs > 0 and traces > 0 for _, svgs, traces in plots), plots
    assert browser.evaluate("document.querySelectorAll('#plot-timeline .shapelayer path').length") >= 2  # faults
    assert load.console_errors == []
    assert load.network_requests() == []
    assert load.requests == [url]
    shot = keep_screenshot(browser, "report-invalid", request)
    assert shot.stat().st_size > 50_000


def test_a_report_without_verdict_renders_under_the_not_checked_banner(browser, shared_reports, request):
    path, _ = shared_reports["unchecked"]
    load = browser.open((path / "report.html").as_uri(), RENDERED)
    assert browser.evaluate("document.querySelector('#verdict .title').innerText") == "Not checked"
    assert browser.evaluate("document.querySelectorAll('#plot-timeline .main-svg').length") > 0
    assert load.console_errors == [] and load.network_requests() == []
    keep_screenshot(browser, "report-unchecked", request)


def test_suite_page_lists_the_runs_links_their_reports_and_sorts_by_column(browser, shared_runs, request):
    root = next(iter(shared_runs.values())).parent
    index = write_suite(root)
    load = browser.open(index.as_uri())
    assert load.console_errors == [] and load.network_requests() == []
    links = browser.evaluate("Array.from(document.querySelectorAll('#runs a')).map(a => a.href)")
    assert sorted(links) == sorted((d / "report.html").as_uri() for d in shared_runs.values())
    browser.evaluate("document.querySelectorAll('#runs th')[0].click()")
    order = browser.evaluate("Array.from(document.querySelectorAll('#runs tbody tr')).map(r => r.cells[0].innerText)")
    assert order == sorted(order)
    keep_screenshot(browser, "suite", request)


def test_the_driver_sees_console_errors_and_network_requests(browser, tmp_path):
    """So that "no error, no request" above means something: a page with both is caught."""
    page = tmp_path / "bad.html"
    page.write_text('<html><body><img src="http://192.0.2.1/pixel.png">'
                    '<script>console.error("boom"); document.body.dataset.renderedMs = "1";</script>'
                    '<script>undefinedFunction();</script></body></html>')
    load = browser.open(page.as_uri(), RENDERED)
    assert "http://192.0.2.1/pixel.png" in load.network_requests()
    assert any("boom" in e for e in load.console_errors)
    assert any("undefinedFunction" in e for e in load.console_errors)
