"""Subcommands of the checkers package. `register` is what harness.cli calls; each command has its own function."""
from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "check", help="find anomalies in results directories and judge them with the ISR model",
        description="Read RESULTS_DIR (or every run under a results root) with PySpark and write verdict.json "
                    "and anomalies.parquet into each.")
    p.add_argument("paths", nargs="+", metavar="RESULTS_DIR", type=str,
                   help="results directories, or a results root holding them; local, or s3://bucket/prefix")
    p.add_argument("--force", action="store_true", help="overwrite an existing verdict.json")
    p.add_argument("--spark-master", default=None, metavar="URL",
                   help="Spark master (default: KAFKA_CHAOS_SPARK_MASTER, else local[*])")
    add_engine_option(p)
    p.add_argument("--json", action="store_true",
                   help="print, instead of the summary, a JSON list with each run's id, path, status, exit code and "
                        "verdict (or error), for scripts; other output goes to stderr")
    add_judgement_options(p)
    p.set_defaults(func=_cmd_check)


def add_engine_option(p: argparse.ArgumentParser) -> None:
    """`check` and `run`: which implementation finds the anomalies."""
    p.add_argument("--engine", choices=("spark", "pandas"), default="spark",
                   help="pandas: the single-process reference implementation (small runs, cross-checks)")


def add_judgement_options(p: argparse.ArgumentParser) -> None:
    """Options of `check` and `run` that set how strict the judgement is where Kafka promises nothing."""
    p.add_argument("--stall-threshold", type=float, default=2.0, metavar="S",
                   help="a partition with writes pending and none acked for longer than S seconds is stalled "
                        "(default 2)")
    p.add_argument("--max-stall", type=float, default=None, metavar="S",
                   help="judge a stall longer than S seconds a violation (default: stalls are reported only)")


def settings_from(args: argparse.Namespace):
    from kafka_chaos.checkers.check import CheckSettings
    return CheckSettings(stall_threshold_s=args.stall_threshold, max_stall_s=args.max_stall)


def _cmd_check(args: argparse.Namespace) -> int:
    from kafka_chaos.checkers.check import check_many
    from kafka_chaos.history.layout import JOURNAL_DIR
    from kafka_chaos.history.objstore import Staged

    # s3://bucket/prefix: its complete runs staged locally (the driver's reads), Spark's jobs reading the bucket
    # itself through s3a (checkers.s3a), and what the check wrote uploaded back
    staged = Staged(args.paths, skip=(JOURNAL_DIR,))         # the journal stays in the bucket: never read here
    with staged as paths:
        return check_many(paths, force=args.force, spark_master=args.spark_master, engine=args.engine,
                          settings=settings_from(args), as_json=args.json, sources=staged.sources())
