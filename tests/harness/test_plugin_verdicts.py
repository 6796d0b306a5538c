"""How the pytest plugin reports a chaos run's verdict: a run without a verdict is an error, never a pass."""

pytest_plugins = ["pytester"]

TEST_FILE = '''
import json
from pathlib import Path
from kafka_chaos.harness.pytest_plugin import _attach
from kafka_chaos.harness.runner import RunResult

def verdict_run(request, tmp_path, verdict, code):
    _attach(request.node, RunResult(tmp_path, code, verdict, None))

def test_incomplete(request, tmp_path):
    verdict_run(request, tmp_path, {"valid": None, "status": "incomplete",
                                    "incomplete": {"run": ["interrupted"], "partitions": {}}}, 3)

def test_valid(request, tmp_path):
    verdict_run(request, tmp_path, {"valid": True, "status": "valid"}, 0)
'''


def test_a_run_without_a_verdict_is_reported_as_an_error_and_a_valid_one_passes(pytester):
    pytester.makepyfile(TEST_FILE)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*no verdict for*interrupted*"])
    assert result.ret != 0
