"""`kafka-chaos run SCENARIO --kafka-version 2.8.2,3.9.2,4.4.0`: the same scenario and seed on each release, one
cluster after another, then a comparison page (report.matrix): what each release did with the same faults.

An entry is a release, or RELEASE:MODE to pick the metadata mode (3.9.2:zookeeper); without one each release runs
its default (KRaft where it has it), or the run's --metadata where the release has that mode.
"""
from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

from kafka_chaos.base.errors import UsageError
from kafka_chaos.cluster.config import metadata_mode
from kafka_chaos.cluster.distribution import parse_version
from kafka_chaos.harness.run_options import RunOptions
from kafka_chaos.harness.runner import RunResult, run, summary_lines

log = logging.getLogger(__name__)


def parse_matrix(text: str, default_mode: str | None) -> list[tuple[str, str]]:
    """'2.8.2,3.9.2:zookeeper,4.4.0' -> [(version, mode), ...]; UsageError on a malformed entry or a mode the
    release lacks, before anything starts."""
    out = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            raise UsageError(f"--kafka-version {text!r}: an empty entry", "write releases as 2.8.2,3.9.2,4.4.0")
        version, _, mode = entry.partition(":")
        parse_version(version)
        asked = mode or None
        if asked is None and default_mode and default_mode in _modes(version):
            asked = default_mode
        out.append((version, metadata_mode(version, asked)))
    if len(set(out)) != len(out):
        raise UsageError(f"--kafka-version {text!r} names a release twice", "name each release once")
    return out


def _modes(version: str) -> tuple[str, ...]:
    from kafka_chaos.base.versions import metadata_modes

    return metadata_modes(version)


def is_matrix(text: str | None) -> bool:
    return bool(text) and "," in text or bool(text) and ":" in text


def run_matrix(options: RunOptions, text: str) -> tuple[int, Path]:
    """Run the scenario on every release with one seed; write the comparison page; the worst run's exit code
    (1 if any broke a guarantee, else 3 if any could not be judged, else 0)."""
    from kafka_chaos.report.matrix import markdown, matrix_row, write_comparison

    if options.reuse_cluster:
        raise UsageError("--reuse-cluster runs on one cluster, a matrix needs one per release",
                         "drop --reuse-cluster")
    entries = parse_matrix(text, options.cluster.metadata)
    first = replace(options, kafka_version=entries[0][0],
                    cluster=replace(options.cluster, metadata=entries[0][1])).resolved()
    seed = first.seed
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    out = Path(options.results) / f"matrix-{stamp}-{options.scenario}-acks{first.acks}-s{seed}"
    results: list[RunResult] = []
    for version, mode in entries:
        opts = replace(options, kafka_version=version, seed=seed, run_id=None, results=out,
                       cluster=replace(options.cluster, metadata=mode),
                       extra_meta=dict(options.extra_meta) | {"matrix": text})
        log.info("matrix: %s on Kafka %s (%s), seed %d", options.scenario, version, mode, seed)
        result = run(opts)
        results.append(result)
        for line in summary_lines(result):
            print(line)
    title = f"{options.scenario}, acks={first.acks}, min.insync.replicas={first.min_isr}, seed {seed}"
    index = write_comparison([r.run_dir for r in results], out, title)
    print(f"\n{title}\n" + markdown([matrix_row(r.run_dir) for r in results]))
    print(f"comparison: {index}")
    codes = [r.exit_code for r in results]
    return (1 if 1 in codes else 3 if 3 in codes else max(codes, default=0)), index
