"""The `kafka-chaos` command. Each package registers its own subcommands; this module only dispatches.

A subcommand module exposes `register(subparsers)`, adding parsers whose `func(args) -> int` does the work.
HarnessError (bad input, broken environment) prints its cause and remedy and exits 2.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import signal
import sys

from base.errors import HarnessError

# Modules that add subcommands, in the order they appear in --help. A module that does not exist yet is skipped.
COMMAND_MODULES = (
    "harness.commands",      # setup, cluster up|status|down, image
    "nemesis.cli",           # nemesis FAULT | heal | list
    "history.cli",         # history repair
    "checkers.cli",          # check
    "report.cli",   # report
    "harness.run_cli",       # run, scenarios
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-chaos",
        description="Jepsen-style chaos tests against a real Kafka KRaft cluster in Docker.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue
            raise
        module.register(sub)
    return parser


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    # SIGTERM takes the same path as Ctrl-C, so every `finally` heals faults and removes containers.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return int(args.func(args) or 0)
    except HarnessError as e:
        print(f"kafka-chaos: error: {e.cause}", file=sys.stderr)
        if e.remedy:
            print(f"kafka-chaos: remedy: {e.remedy}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("kafka-chaos: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
