"""The pytest plugin's vocabulary: every option `--chaos-*` (old spellings hidden, working, warning), the
namespaced `chaos_quick` marker (old `quick` still counted, warning), settings checked at start-up, and the
pytest-html link to a run's report relative to the HTML page."""
import html
import json
import re

pytest_plugins = ["pytester"]

OPTIONS_TEST = '''
def test_options(request):
    opt = request.config.getoption
    print("SEEN", opt("--chaos-results"), opt("--chaos-kafka-version"), opt("--chaos-keep-cluster"))
'''


def test_the_old_option_spellings_still_work_and_warn(pytester):
    pytester.makepyfile(OPTIONS_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "-s", "--results-dir", "out", "--kafka-version", "3.9.2",
                                "--keep-cluster")
    result.assert_outcomes(passed=1)
    for line in ("*SEEN out 3.9.2 True*", "*--results-dir is deprecated; use --chaos-results*",
                 "*--kafka-version is deprecated; use --chaos-kafka-version*",
                 "*--keep-cluster is deprecated; use --chaos-keep-cluster*"):
        result.stdout.fnmatch_lines([line])


def test_the_new_spellings_need_no_warning_and_are_the_only_ones_in_help(pytester):
    pytester.makepyfile(OPTIONS_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "-s", "--chaos-results", "out",
                                "--chaos-kafka-version", "4.1.0", "--chaos-keep-cluster")
    result.stdout.fnmatch_lines(["*SEEN out 4.1.0 True*"])
    assert "deprecated" not in result.stdout.str()
    help_text = pytester.runpytest("--help").stdout.str()
    group = help_text[help_text.index("kafka-chaos:"):]
    group = group[:group.index("\n\n")]
    flags = re.findall(r"^\s+(--[\w-]+)", group, re.M)
    assert flags and all(f.startswith("--chaos-") for f in flags), flags
    assert "--chaos-broker-config" in flags and "--chaos-topic-config" in flags and "--chaos-metadata" in flags


def test_chaos_metadata_takes_a_metadata_mode(pytester):
    pytester.makepyfile("""
def test_mode(request):
    print("MODE", request.config.getoption("--chaos-metadata"))
""")
    pytester.runpytest("-p", "no:cacheprovider", "-s", "--chaos-metadata", "zookeeper").stdout.fnmatch_lines(
        ["*MODE zookeeper*"])
    bad = pytester.runpytest("-p", "no:cacheprovider", "--chaos-metadata", "etcd")
    assert bad.ret != 0 and "invalid choice" in bad.stderr.str()


MARKED = '''
import pytest

@pytest.mark.chaos
@pytest.mark.chaos_quick
def test_new_mark():
    pass

@pytest.mark.chaos
@pytest.mark.quick
def test_old_mark():
    pass

@pytest.mark.chaos
def test_full_only():
    pass
'''


def test_chaos_quick_selects_the_quick_subset_and_the_old_marker_still_counts_with_a_warning(pytester):
    pytester.makepyfile(MARKED)
    result = pytester.runpytest("-p", "no:cacheprovider", "--strict-markers", "-v")
    result.assert_outcomes(passed=2, deselected=1)
    for line in ("*test_new_mark PASSED*", "*test_old_mark PASSED*",
                 "*the marker 'quick' is deprecated; use @pytest.mark.chaos_quick*"):
        result.stdout.fnmatch_lines([line])
    pytester.runpytest("-p", "no:cacheprovider", "--chaos-suite", "full").assert_outcomes(passed=3)


def test_a_malformed_setting_is_a_usage_error_naming_the_fix(pytester):
    pytester.makepyfile(OPTIONS_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "--chaos-broker-config", "replica.lag.time.max.ms")
    assert result.ret == 4                              # pytest's usage error
    result.stderr.fnmatch_lines(["*--chaos-broker-config*no '='*replica.lag.time.max.ms=VALUE*"])


REPORTED = '''
from pathlib import Path
from kafka_chaos.harness.pytest_plugin import _attach
from kafka_chaos.harness.runner import RunResult

def test_run(request):
    run = Path("results/r1")
    run.mkdir(parents=True)
    (run / "report.html").write_text("<html></html>")
    _attach(request.node, RunResult(run, 0, {"valid": True, "status": "valid"}, run / "report.html"))
'''


def test_the_html_extra_links_the_report_relative_to_the_html_page(pytester):
    pytester.makepyfile(REPORTED)
    result = pytester.runpytest("-p", "no:cacheprovider", "--html", "pages/suite/index.html")
    result.assert_outcomes(passed=1)
    page = (pytester.path / "pages" / "suite" / "index.html").read_text()
    blob = json.loads(html.unescape(re.search(r'data-jsonblob="([^"]*)"', page).group(1)))
    extras = [e for t in blob["tests"].values() for r in t for e in r.get("extras", [])]
    links = [e["content"] for e in extras if e.get("name") == "loss report"]
    assert links == ["../../results/r1/report.html"]
    assert (pytester.path / "pages" / "suite" / links[0]).resolve().is_file()
