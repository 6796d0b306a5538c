"""`kafka-chaos history repair DIR`: rebuild a crashed run's Parquet history from its journals."""
from __future__ import annotations

import argparse


def register(subparsers) -> None:
    history = subparsers.add_parser("history", help="work on a run's history files")
    sub = history.add_subparsers(dest="history_command", metavar="ACTION")
    sub.required = True
    repair = sub.add_parser("repair", help="rebuild history/*.parquet from history/journal/ after a crash",
                            description="Rebuild a results directory's Parquet history from its crash-safe "
                                        "journal. Sends without a delivery report become outcome info.")
    repair.add_argument("dir", help="the results directory, results/<run_id>")
    repair.set_defaults(func=_cmd_repair)


def _cmd_repair(args: argparse.Namespace) -> int:
    from kafka_chaos.history.writer import repair

    summary = repair(args.dir)
    print(f"{args.dir}: {summary}")
    return 0
