"""The `kafka-chaos` command. Each package registers its own subcommands; this module only dispatches.

One way to add a subcommand: a package's `cli` module exposes `register(subparsers)`, adding parsers with
`set_defaults(func=...)` whose `func(args) -> int` does the work; it is listed in COMMAND_MODULES below. A module
that fails to import is an error (the tool would otherwise lose a subcommand in silence).
HarnessError (bad input, broken environment) prints its cause and remedy and exits 2.
"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import traceback

from kafka_chaos.base import exits
from kafka_chaos.base.errors import HarnessError
from kafka_chaos.checkers import cli as checkers_cli
from kafka_chaos.harness import commands as harness_commands
from kafka_chaos.harness import replay, run_cli, shrink, soak
from kafka_chaos.history import cli as history_cli
from kafka_chaos.nemesis import cli as nemesis_cli
from kafka_chaos.report import cli as report_cli

# The modules that add subcommands, in the order they appear in --help.
COMMAND_MODULES = (
    harness_commands,      # setup, cluster up|status|down
    nemesis_cli,           # nemesis FAULT | heal | list
    history_cli,           # history repair
    checkers_cli,          # check
    report_cli,            # report
    run_cli,               # run, scenarios
    replay,                # replay
    shrink,                # shrink
    soak,                  # soak
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-chaos",
        description="Jepsen-style chaos tests against a real Kafka KRaft cluster in Docker.",
        epilog=exits.HELP,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--version", action="version", version=f"kafka-chaos {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in COMMAND_MODULES:
        module.register(sub)
    _everywhere(sub)
    return parser


def _everywhere(subparsers) -> None:
    """-v/--verbose after any subcommand too, and the exit codes in every --help."""
    for p in subparsers.choices.values():
        p.epilog = p.epilog or exits.HELP
        if not any("--verbose" in a.option_strings for a in p._actions):
            p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="debug logging")
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                _everywhere(a)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kafka-chaos")
    except PackageNotFoundError:
        return "unknown (not installed)"


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
    except Exception:
        traceback.print_exc()
        print(f"kafka-chaos: internal error (a bug in kafka-chaos, not a verdict; exit {exits.CRASH}): please "
              "report it with the traceback above", file=sys.stderr)
        return exits.CRASH


if __name__ == "__main__":
    sys.exit(main())
