"""pytest plugin (entry point pytest11): chaos scenarios as tests.

Options: --kafka-version, --chaos-duration, --chaos-seed, --results-dir, --keep-cluster, --chaos-suite.
Fixtures: `chaos_cluster` (one cluster per session, reset between tests: faults healed, topics deleted),
`nemesis` (faults against it, healed after the test), `chaos_run` (a whole scenario run on it, its verdict and
report attached to the test's report). Marker: `chaos`. A chaos test fails only on a violation: something the ISR
model says the configuration cannot do. Predicted losses are reported, not failed.
"""
from __future__ import annotations

from pathlib import Path

import pytest

QUICK = "quick"


def pytest_addoption(parser):
    group = parser.getgroup("kafka-chaos")
    group.addoption("--kafka-version", default=None, help="Kafka release for chaos tests (default: newest 4.x)")
    group.addoption("--chaos-duration", type=float, default=None, help="seconds of workload per scenario")
    group.addoption("--chaos-seed", type=int, default=None, help="seed of fault schedules (default: per test)")
    group.addoption("--results-dir", default=None, help="where run results go (default results/)")
    group.addoption("--keep-cluster", action="store_true", help="leave the chaos cluster running at the end")
    group.addoption("--chaos-shard", metavar="K/N", type=_shard, default=None,
                    help="run only the K-th of N deterministic shards of the chaos tests (e.g. 3/14; CI's job matrix)")
    group.addoption("--chaos-suite", choices=("quick", "full"), default=QUICK,
                    help="quick: the chaos tests marked quick (CI); full: the whole scenario x profile matrix")


def pytest_configure(config):
    if config.getoption("--chaos-shard", None):
        from harness.shards import ShardSelection

        config.pluginmanager.register(ShardSelection(*config.getoption("--chaos-shard")), "kafka-chaos-shard")
    config.addinivalue_line("markers", "chaos: a fault scenario run end to end against a real cluster")
    config.addinivalue_line("markers", "quick: a chaos test that belongs to the quick subset run in CI")


def pytest_collection_modifyitems(config, items):
    """Outside the full suite, chaos tests not marked quick are deselected (not skipped: they are not run)."""
    if config.getoption("--chaos-suite") == "full":
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("chaos") and not item.get_closest_marker("quick") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _shard(text: str) -> tuple[int, int]:
    from harness.shards import parse_shard

    return parse_shard(text)


@pytest.fixture(scope="session")
def chaos_cluster(request):
    """The session's chaos cluster; with --keep-cluster it is left running (and reused next time)."""
    from base.errors import UsageError
    from cluster.kafka_cluster import KafkaCluster
    from harness.runner import chaos_cluster_config

    keep = request.config.getoption("--keep-cluster")
    version = request.config.getoption("--kafka-version")
    name = "kafka-chaos-pytest"
    if keep:
        try:
            cluster = KafkaCluster.attach(name)
        except UsageError:
            cluster = KafkaCluster(chaos_cluster_config(name, version), persistent=True).up()
    else:
        import os

        cluster = KafkaCluster(chaos_cluster_config(f"pytest{os.getpid()}", version)).up()
    yield cluster
    if not keep:
        cluster.down()


@pytest.fixture
def nemesis(chaos_cluster):
    """A Nemesis on the session cluster; whatever it started is healed after the test."""
    from nemesis.control import Nemesis

    n = Nemesis(chaos_cluster)
    yield n
    n.heal_all()


@pytest.fixture
def chaos_run(request, chaos_cluster):
    """Run a scenario on the session cluster: `chaos_run("leader-kill", acks="1", min_isr=2)` -> RunResult.

    The result's report path and the verdict's counts go into the test's report (JUnit properties, pytest-html).
    """
    from harness.runner import RunOptions, run
    from nemesis.control import sweep

    cfg = request.config
    results = Path(cfg.getoption("--results-dir") or "results")
    made = []

    def _run(scenario: str, **kwargs):
        opts = RunOptions(scenario=scenario, results=results, kafka_version=chaos_cluster.version, live=False,
                          **kwargs)
        if cfg.getoption("--chaos-duration") is not None:
            opts.duration_s = cfg.getoption("--chaos-duration")
        if cfg.getoption("--chaos-seed") is not None:
            opts.seed = cfg.getoption("--chaos-seed")
        result = run(opts, cluster=chaos_cluster)
        made.append(result)
        _attach(request.node, result)
        return result

    yield _run
    sweep(chaos_cluster)                          # reset: every node up, no rule of ours, no topic left
    try:
        chaos_cluster.delete_topics()
    except Exception:
        pass


def _attach(item, result) -> None:
    v = result.verdict or {}
    item.user_properties.append(("results", str(result.run_dir)))
    if result.report:
        item.user_properties.append(("report", str(result.report)))
    for key in ("valid", "status"):
        item.user_properties.append((key, str(v.get(key))))
    item.user_properties.append(("model_disagreements", str(len(v.get("model_disagreements") or []))))
    for kind, n in (v.get("anomalies") or {}).items():
        item.user_properties.append((f"anomalies.{kind}", str(n)))
    for kind, n in (v.get("counts") or {}).items():
        item.user_properties.append((f"counts.{kind}", str(n)))
    item.stash.setdefault(_REPORTS, []).append(result)


_REPORTS = pytest.StashKey[list]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call":
        return
    results = item.stash.get(_REPORTS, [])
    if not results:
        return
    unjudged = [r for r in results if r.verdict is not None and r.verdict.get("valid") is None]
    if unjudged:
        # A run that could not be judged is neither a pass nor a violation: the test is reported as an error.
        report.outcome = "failed"
        report.chaos_incomplete = True
        report.longrepr = "\n".join(f"no verdict for {r.run_dir}: {(r.verdict.get('incomplete') or {})}"
                                    for r in unjudged)
    try:
        import pytest_html
    except ImportError:
        return
    extras = getattr(report, "extras", [])
    for r in results:
        if r.report:
            extras.append(pytest_html.extras.url(str(Path(r.report).resolve()), name="loss report"))
        if r.verdict:
            extras.append(pytest_html.extras.json(r.verdict, name="verdict"))
    report.extras = extras


def pytest_report_teststatus(report, config):
    if getattr(report, "chaos_incomplete", False):
        return "error", "E", ("ERROR (no verdict)", {"red": True})
    return None
