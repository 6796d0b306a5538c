"""pytest plugin (entry point pytest11): command-line options and the `chaos` marker for fault scenarios."""
from __future__ import annotations


def pytest_addoption(parser):
    group = parser.getgroup("kafka-chaos")
    group.addoption("--kafka-version", default=None, help="Kafka release for chaos tests (default: newest 4.x)")
    group.addoption("--chaos-duration", type=float, default=None, help="seconds of workload per scenario")
    group.addoption("--chaos-seed", type=int, default=None, help="seed of fault schedules and workloads")
    group.addoption("--results-dir", default=None, help="where run results go (default results/)")
    group.addoption("--keep-cluster", action="store_true", help="leave the chaos cluster running at the end")


def pytest_configure(config):
    config.addinivalue_line("markers", "chaos: a fault scenario run end to end against a real cluster")
