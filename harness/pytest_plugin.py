"""pytest plugin (entry point pytest11): chaos scenarios as tests.

Options, all `--chaos-*` and named as `kafka-chaos run` names them: --chaos-kafka-version, --chaos-results,
--chaos-keep-cluster, --chaos-broker-config, --chaos-topic-config, --chaos-duration, --chaos-seed, --chaos-suite,
--chaos-client (librdkafka, java or both: the client library of every chaos_run),
--chaos-shard (the old --kafka-version, --results-dir and --keep-cluster still work, hidden, with a warning).
--chaos-kafka-version may be a list (2.8.2,3.9.2:zookeeper,4.4.0): every test using the chaos cluster then runs
once per release, the release in its id (`test_x[3.9.2-zookeeper]`), one cluster per release in turn.
Fixtures: `chaos_cluster` (one cluster per session, reset between tests: faults healed, topics deleted),
`nemesis` (faults against it, healed after the test), `chaos_run` (a whole scenario run on it, its verdict and
report attached to the test's report). Markers: `chaos`, and `chaos_quick` for the quick subset (the old `quick`
still counts, with a warning). A chaos test fails only on a violation: something the ISR model says the
configuration cannot do. Predicted losses are reported, not failed.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

import pytest

QUICK = "quick"                  # --chaos-suite's value
QUICK_MARK = "chaos_quick"
OLD_QUICK_MARK = "quick"
# today's option -> its old spelling, kept as a hidden alias that warns
RENAMED = {"--chaos-kafka-version": "--kafka-version", "--chaos-results": "--results-dir",
           "--chaos-keep-cluster": "--keep-cluster"}


def pytest_addoption(parser):
    group = parser.getgroup("kafka-chaos")
    group.addoption("--chaos-kafka-version", default=None, metavar="V",
                    help="Kafka release for chaos tests (default: newest 4.x); a list (2.8.2,3.9.2:zookeeper,4.4.0) "
                         "runs every chaos test on each, one cluster per release, the release in the test id")
    group.addoption("--chaos-metadata", choices=("kraft", "zookeeper"), default=None,
                    help="metadata mode of the chaos cluster (default: KRaft where the release has it)")
    group.addoption("--chaos-duration", type=float, default=None, help="seconds of workload per scenario")
    group.addoption("--chaos-seed", type=int, default=None, help="seed of fault schedules (default: per test)")
    group.addoption("--chaos-results", default=None, metavar="DIR", help="where run results go (default results/)")
    group.addoption("--chaos-keep-cluster", action="store_true", help="leave the chaos cluster running at the end")
    group.addoption("--chaos-broker-config", action="append", default=None, metavar="KEY=VALUE",
                    help="a broker setting for the session's cluster (repeatable), as `run --broker-config`")
    group.addoption("--chaos-topic-config", action="append", default=None, metavar="KEY=VALUE",
                    help="a topic setting for every chaos run's topic (repeatable), as `run --topic-config`")
    for new, old in RENAMED.items():
        flag = {"action": "store_const", "const": True} if new == "--chaos-keep-cluster" else {}
        group.addoption(old, dest=_old_dest(old), default=None, help=argparse.SUPPRESS, **flag)
    group.addoption("--chaos-client", choices=("librdkafka", "java", "both"), default=None,
                    help="the client library of chaos_run's workload (default: each test's, else librdkafka)")
    group.addoption("--chaos-shard", metavar="K/N", type=_shard, default=None,
                    help="run only the K-th of N deterministic shards of the chaos tests (e.g. 3/14; CI's job matrix)")
    group.addoption("--chaos-suite", choices=("quick", "full"), default=QUICK,
                    help="quick: the chaos tests marked chaos_quick (CI); full: the whole scenario x profile matrix")


def _old_dest(flag: str) -> str:
    return "chaos_old_" + flag.lstrip("-").replace("-", "_")


def _adopt_old_spellings(config) -> None:
    """An old option spelling sets today's option (unless that was given too) and warns."""
    for new, old in RENAMED.items():
        value = config.getoption(_old_dest(old))
        if value is None:
            continue
        config.issue_config_time_warning(pytest.PytestDeprecationWarning(
            f"kafka-chaos: {old} is deprecated; use {new}"), stacklevel=2)
        dest = new.lstrip("-").replace("-", "_")
        if not getattr(config.option, dest):
            setattr(config.option, dest, value)


def _settings(config) -> tuple[dict[str, str], dict[str, str]]:
    """--chaos-broker-config and --chaos-topic-config, checked once at start-up (a pytest usage error if bad)."""
    from kafka_chaos.base.errors import HarnessError
    from kafka_chaos.cluster.settings import check_topic_settings, parse_settings

    try:
        broker = parse_settings(config.getoption("--chaos-broker-config"), "--chaos-broker-config")
        topic = parse_settings(config.getoption("--chaos-topic-config"), "--chaos-topic-config")
        check_topic_settings(topic)
        if broker:                         # bad values of the settings the harness reads, before any cluster starts
            from kafka_chaos.harness.cluster_options import ClusterChoice
            from kafka_chaos.harness.run_options import chaos_cluster_config

            ClusterChoice(broker_config=broker).apply(chaos_cluster_config("pytest"))
    except HarnessError as e:
        raise pytest.UsageError(f"{e.cause}; {e.remedy}") from None
    return broker, topic


_SETTINGS = pytest.StashKey[tuple]()
_RELEASES = pytest.StashKey[list]()


def _releases(config) -> list[tuple[str, str]] | None:
    """--chaos-kafka-version as a list of (version, metadata mode), checked at start-up; None for one release
    (or none), which keeps tests unparametrized. Entries as `kafka-chaos run --kafka-version A,B:MODE` takes them."""
    from kafka_chaos.base.errors import HarnessError
    from kafka_chaos.harness.matrix import is_matrix, parse_matrix

    text = config.getoption("--chaos-kafka-version")
    if not is_matrix(text):
        return None
    try:
        return parse_matrix(text, config.getoption("--chaos-metadata"))
    except HarnessError as e:
        raise pytest.UsageError(f"{e.cause}; {e.remedy}") from None


def release_id(version: str, mode: str) -> str:
    """A test id's release part: the version, with the metadata mode where it is not the release's default."""
    from kafka_chaos.cluster.config import metadata_mode

    return version if mode == metadata_mode(version, None) else f"{version}-{mode}"


def pytest_generate_tests(metafunc):
    """With a list of releases, every test that uses the chaos cluster (directly, or through chaos_run or
    nemesis) runs once per release: `test_x[3.9.2-zookeeper]`. The fixture is session-scoped, so pytest groups the
    tests by release and starts one cluster per release, one after another."""
    releases = metafunc.config.stash.get(_RELEASES, None)
    if releases and "chaos_release" in metafunc.fixturenames:
        metafunc.parametrize("chaos_release", releases, indirect=True, scope="session",
                             ids=[release_id(v, m) for v, m in releases])


def pytest_configure(config):
    if config.getoption("--chaos-shard", None):
        from kafka_chaos.harness.shards import ShardSelection

        config.pluginmanager.register(ShardSelection(*config.getoption("--chaos-shard")), "kafka-chaos-shard")
    config.addinivalue_line("markers", "chaos: a fault scenario run end to end against a real cluster")
    config.addinivalue_line("markers", f"{QUICK_MARK}: a chaos test that belongs to the quick subset run in CI")
    config.addinivalue_line("markers", f"{OLD_QUICK_MARK}: deprecated spelling of {QUICK_MARK}")
    _adopt_old_spellings(config)
    config.stash[_SETTINGS] = _settings(config)
    config.stash[_RELEASES] = _releases(config)


def _quick(item) -> bool:
    if item.get_closest_marker(QUICK_MARK):
        return True
    if item.get_closest_marker(OLD_QUICK_MARK):
        item.warn(pytest.PytestDeprecationWarning(f"the marker '{OLD_QUICK_MARK}' is deprecated; use "
                                                  f"@pytest.mark.{QUICK_MARK}"))
        return True
    return False


def pytest_collection_modifyitems(config, items):
    """Outside the full suite, chaos tests not marked chaos_quick are deselected (not skipped: they are not run)."""
    if config.getoption("--chaos-suite") == "full":
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("chaos") and not _quick(item) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _shard(text: str) -> tuple[int, int]:
    from kafka_chaos.harness.shards import parse_shard

    return parse_shard(text)


@pytest.fixture(scope="session")
def chaos_release(request) -> tuple[str | None, str | None]:
    """(Kafka version, metadata mode) of the chaos cluster: one entry of a --chaos-kafka-version list (the test is
    parametrized over them), else the single --chaos-kafka-version and --chaos-metadata (None: the defaults)."""
    if hasattr(request, "param"):
        return request.param
    return request.config.getoption("--chaos-kafka-version"), request.config.getoption("--chaos-metadata")


@pytest.fixture(scope="session")
def chaos_cluster(request, chaos_release):
    """The session's chaos cluster (one per release of a --chaos-kafka-version list), with --chaos-broker-config
    applied; with --chaos-keep-cluster it is left running (and reused next time, if it has those settings)."""
    from kafka_chaos.base.errors import UsageError
    from kafka_chaos.cluster.kafka_cluster import KafkaCluster
    from kafka_chaos.harness.cluster_options import ClusterChoice
    from kafka_chaos.harness.runner import chaos_cluster_config

    keep = request.config.getoption("--chaos-keep-cluster")
    version, mode = chaos_release
    listed = request.config.stash.get(_RELEASES, None) is not None
    choice = ClusterChoice(broker_config=request.config.stash[_SETTINGS][0], metadata=mode)
    suffix = f"-{release_id(version, mode)}".replace(".", "-") if listed else ""
    name = "kafka-chaos-pytest" + suffix
    if keep:
        try:
            cluster = KafkaCluster.attach(name)
        except UsageError:
            cluster = KafkaCluster(choice.apply(chaos_cluster_config(name, version)), persistent=True).up()
        else:
            choice.check_matches(cluster.config)
    else:
        cluster = KafkaCluster(choice.apply(chaos_cluster_config(f"pytest{os.getpid()}{suffix}", version))).up()
    yield cluster
    if not keep:
        cluster.down()


@pytest.fixture
def nemesis(chaos_cluster):
    """A Nemesis on the session cluster; whatever it started is healed after the test."""
    from kafka_chaos.nemesis.control import Nemesis

    n = Nemesis(chaos_cluster)
    yield n
    n.heal_all()


@pytest.fixture
def chaos_run(request, chaos_cluster):
    """Run a scenario on the session cluster: `chaos_run("leader-kill", acks="1", min_isr=2)` -> RunResult.

    The result's report path and the verdict's counts go into the test's report (JUnit properties, pytest-html).
    """
    from kafka_chaos.harness.runner import RunOptions, run
    from kafka_chaos.nemesis.control import sweep

    cfg = request.config
    results = Path(cfg.getoption("--chaos-results") or "results")
    made = []

    def _run(scenario: str, **kwargs):
        kwargs.setdefault("topic_config", dict(cfg.stash[_SETTINGS][1]))
        if cfg.getoption("--chaos-client") is not None:
            kwargs["client"] = cfg.getoption("--chaos-client")
        opts = RunOptions(scenario=scenario, results=results, kafka_version=chaos_cluster.version, live=False,
                          **kwargs)
        if cfg.getoption("--chaos-duration") is not None:
            opts = replace(opts, duration_s=cfg.getoption("--chaos-duration"))
        if cfg.getoption("--chaos-seed") is not None:
            opts = replace(opts, seed=cfg.getoption("--chaos-seed"))
        from kafka_chaos.harness.scenarios import scenario as _scenario
        overrides = _scenario(scenario).cluster_overrides
        own = (overrides.get("power_loss_fs") and not chaos_cluster.config.power_loss_fs) or \
            (overrides.get("link_proxy") and not chaos_cluster.config.link_proxy)
        result = run(opts, cluster=None if own else chaos_cluster)     # a power-loss or link run makes its own cluster
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
            extras.append(pytest_html.extras.url(report_link(r.report, item.config), name="loss report"))
        if r.verdict:
            extras.append(pytest_html.extras.json(r.verdict, name="verdict"))
    report.extras = extras


def report_link(report: Path | str, config) -> str:
    """The run's report.html relative to the pytest-html page (`--html`), so the link survives the results being
    moved together (a CI artifact); relative to the working directory without --html."""
    html = getattr(config.option, "htmlpath", None)
    base = Path(html).resolve().parent if html else Path.cwd()
    return Path(os.path.relpath(Path(report).resolve(), base)).as_posix()


def pytest_report_teststatus(report, config):
    if getattr(report, "chaos_incomplete", False):
        return "error", "E", ("ERROR (no verdict)", {"red": True})
    return None
