"""`kafka-chaos run SCENARIO --repeat N`: the same scenario N times with seeds seed..seed+N-1 (Jepsen's test count).

One process, so one warm Spark session judges every run (its start-up is paid once), and one cluster: between runs
it is brought back to a healthy baseline the way the pytest plugin does between tests (every node running and
unpaused, no rule of ours, every broker registered; each run makes its topic afresh). A cluster that does not come
back is replaced, if this process started it. The runs end with the table of verdicts `check` writes for many runs,
and the exit code is the worst run's. Ctrl-C takes the single run's path (faults healed), then stops the series.
"""
from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafka_chaos.base.errors import EnvironmentProblem, UsageError
from kafka_chaos.checkers.check import RunOutcome, exit_code, print_outcomes, write_table
from kafka_chaos.cluster.kafka_cluster import KafkaCluster
from kafka_chaos.harness.live import LiveDisplay
from kafka_chaos.harness.run_options import RunOptions
from kafka_chaos.harness.runner import RunResult, cluster_for, run, summary_lines

log = logging.getLogger(__name__)
HEALTHY_TIMEOUT_S = 120.0


@dataclass
class Series:
    """What a `--repeat` produced: each run's result, the table of verdicts, the worst exit code."""

    results: list[RunResult] = field(default_factory=list)
    exit_code: int = 0
    table: Path | None = None
    cluster_up_s: float = 0.0           # the one cluster start every run shared


def seeded(options: RunOptions, count: int) -> list[RunOptions]:
    """The N runs' options, validated before anything starts: seeds seed..seed+N-1 (the first drawn if not given)."""
    if not isinstance(count, int) or count < 1:
        raise UsageError(f"--repeat {count}: must be a whole number of runs, 1 or more", "use --repeat 1 or more")
    first = options.resolved()
    return [replace(first, seed=first.seed + i, run_id=None,
                    extra_meta=dict(first.extra_meta) | {"repeat": {"index": i + 1, "of": count}})
            for i in range(count)]


def outcome(result: RunResult) -> RunOutcome:
    """A run's line in the table of verdicts, as `check` makes it."""
    v = result.verdict
    return RunOutcome((v or {}).get("run_id", result.run_dir.name), result.run_dir, "checked",
                      v.get("valid") if v else None, v)


def tabulate(results: list[RunResult], root: Path) -> tuple[int, Path | None]:
    """Print the table of verdicts, write verdicts.parquet under the results root; the worst run's exit code."""
    outcomes = [outcome(r) for r in results]
    print(f"\n{len(outcomes)} run(s):")
    print_outcomes(outcomes)
    return exit_code(outcomes), write_table(outcomes, [root])


def run_repeated(options: RunOptions, count: int) -> Series:
    """Run the series on one cluster (started here unless --reuse-cluster), removed at the end unless kept."""
    plans = seeded(options, count)
    live = plans[0].live if plans[0].live is not None else sys.stdout.isatty()
    series = Series()
    t0 = time.monotonic()
    cluster, owned = cluster_for(plans[0], LiveDisplay(enabled=live))
    series.cluster_up_s = time.monotonic() - t0
    try:
        for i, opts in enumerate(plans):
            if i:
                cluster = _healthy(cluster, owned, opts)
            log.info("run %d of %d: %s seed %d", i + 1, count, opts.scenario, opts.seed)
            result = run(opts, cluster=cluster)
            series.results.append(result)
            for line in summary_lines(result):
                print(line)
    except KeyboardInterrupt:
        if series.results:
            print(f"interrupted after {len(series.results)} of {count} runs", file=sys.stderr)
            tabulate(series.results, plans[0].results)
        raise
    finally:
        if owned and not plans[0].keep_cluster:
            cluster.down()
    if plans[0].check:
        series.exit_code, series.table = tabulate(series.results, plans[0].results)
    return series


def _healthy(cluster: KafkaCluster, owned: bool, opts: RunOptions) -> KafkaCluster:
    """The cluster back at its baseline for the next run; a new one if it cannot get there and is ours."""
    from kafka_chaos.nemesis.control import sweep

    try:
        problems = sweep(cluster)
        if problems:
            raise EnvironmentProblem("; ".join(problems))
        cluster.wait_ready(HEALTHY_TIMEOUT_S)
        return cluster
    except Exception as e:
        if not owned:
            raise EnvironmentProblem(f"the cluster '{cluster.config.name}' did not come back healthy between runs: {e}",
                               "kafka-chaos cluster down, then run again") from e
        log.warning("the cluster did not come back healthy between runs (%s): starting a new one", e)
    cluster.down()
    fresh, _ = cluster_for(opts, LiveDisplay(enabled=False))
    return fresh
