"""Results directories for the report tests, made by history.synthetic.sample (hand-written verdict and anomalies)."""
from __future__ import annotations

import pytest

from kafka_chaos.history.synthetic import SampleRun, write_sample_run


@pytest.fixture
def make_run(tmp_path):
    """make_run(name, **SampleRun fields) -> a results directory under tmp_path."""

    def make(name: str = "run", **fields):
        return write_sample_run(tmp_path / name, SampleRun(**fields))

    return make


@pytest.fixture(scope="module")
def shared_runs(tmp_path_factory):
    """Runs whose reports several read-only tests look at, built once per module (a report takes a second)."""
    root = tmp_path_factory.mktemp("shared")
    return {
        "valid": write_sample_run(root / "valid", SampleRun(lost=4, duplicates=2, seed=42)),
        "invalid": write_sample_run(root / "invalid", SampleRun(lost=5, lost_violations=1, duplicates=2)),
        "unchecked": write_sample_run(root / "unchecked", SampleRun(checked=False)),
    }


@pytest.fixture(scope="module")
def shared_reports(shared_runs):
    """name -> (results directory, report.html text) for the shared runs."""
    from kafka_chaos.report.page import write_report

    return {name: (path, write_report(path).read_text()) for name, path in shared_runs.items()}
