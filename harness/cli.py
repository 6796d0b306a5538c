"""The `kafka-chaos` command. Each package registers its own subcommands; this module only dispatches.

One way to add a subcommand: a package's `cli` module exposes `register(subparsers)`, adding parsers with
`set_defaults(func=...)` whose `func(args) -> int` does the work; it is listed in COMMAND_MODULES below. A module
that fails to import is an error (the tool would otherwise lose a subcommand in silence).
HarnessError (bad input, broken environment) prints its cause and remedy and exits 2.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import signal
import sys
import traceback

from kafka_chaos.base import exits
from kafka_chaos.base.errors import HarnessError
from kafka_chaos.harness import doc_pages

# The modules that add subcommands, in the order they appear in --help. Imported when the parser is built, not
# when this module is: the workload's processes start by spawn, which re-imports the main module (the
# `kafka-chaos` script, hence this one) in every child, and pandas, pyarrow and the rest cost a second or more each.
COMMAND_MODULES = (
    "kafka_chaos.harness.commands",      # setup, cluster up|status|down
    "kafka_chaos.nemesis.cli",           # nemesis FAULT | heal | list
    "kafka_chaos.history.cli",           # history repair
    "kafka_chaos.checkers.cli",          # check
    "kafka_chaos.report.cli",            # report
    "kafka_chaos.report.index_cli",      # index, serve
    "kafka_chaos.harness.s3_cli",        # upload
    "kafka_chaos.harness.run_cli",       # run, scenarios
    "kafka_chaos.harness.replay",        # replay
    "kafka_chaos.harness.shrink",        # shrink
    "kafka_chaos.harness.soak",          # soak
    "kafka_chaos.harness.docs_cli",      # docs
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-chaos",
        description="Jepsen-style chaos tests against a real Kafka KRaft cluster in Docker.",
        epilog=f"{exits.HELP}. {doc_pages.epilog(())}",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--version", action="version", version=f"kafka-chaos {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    _everywhere(sub)
    return parser


def _everywhere(subparsers, path: tuple[str, ...] = ()) -> None:
    """-v/--verbose after any subcommand too, and in every --help the exit codes, then the docs page that covers
    the command (harness/doc_pages.py)."""
    for name, p in subparsers.choices.items():
        p.epilog = f"{p.epilog or exits.HELP}. {doc_pages.epilog((*path, name))}"
        if not any("--verbose" in a.option_strings for a in p._actions):
            p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="debug logging")
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                _everywhere(a, (*path, name))


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
    try:
        args = parser.parse_args(argv)      # an option's own type may refuse a value with cause and remedy
    except HarnessError as e:
        return _refused(e)
    configure_logging(args.verbose)
    # SIGTERM takes the same path as Ctrl-C, so every `finally` heals faults and removes containers.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return int(args.func(args) or 0)
    except HarnessError as e:
        return _refused(e)
    except KeyboardInterrupt:
        print("kafka-chaos: interrupted", file=sys.stderr)
        return exits.INTERRUPTED
    except Exception:
        traceback.print_exc()
        print(f"kafka-chaos: internal error (a bug in kafka-chaos, not a verdict; exit {exits.CRASH}): please "
              "report it with the traceback above", file=sys.stderr)
        return exits.CRASH


OWN_LOGGERS = ("kafka_chaos", "kafka-chaos", "__main__")


def own_or_warning(record: logging.LogRecord) -> bool:
    """kafka-chaos's own lines at any level, a library's only from WARNING up: py4j logs a retried command's
    traceback at INFO on the root logger (its finalizer thread racing the JVM's end), which is not ours to show."""
    return record.levelno >= logging.WARNING or record.name.split(".")[0] in OWN_LOGGERS


def configure_logging(verbose: bool) -> None:
    """The terminal's log lines: INFO, or DEBUG with -v, of kafka-chaos's own loggers (see own_or_warning)."""
    root = logging.getLogger()
    ours = not root.handlers        # else basicConfig does nothing: the handlers are the embedding program's
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    for handler in root.handlers if ours else ():
        handler.addFilter(own_or_warning)
    # py4j's DEBUG is its wire protocol, a few lines per call into Spark's JVM: not even formatted
    logging.getLogger("py4j").setLevel(logging.WARNING)


def _refused(e: HarnessError) -> int:
    print(f"kafka-chaos: error: {e.cause}", file=sys.stderr)
    if e.remedy:
        print(f"kafka-chaos: remedy: {e.remedy}", file=sys.stderr)
    return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
