"""Which documentation page covers each command: every --help ends with it (harness/cli.py), and the docs tests
check that each page exists in docs/ and that every subcommand has one. Kept free of heavy imports: the CLI module
imports it, and the workload's spawned processes re-import the CLI."""
from __future__ import annotations

SERVE_HINT = "`kafka-chaos docs` serves the site"

# command path (the subcommand words) -> page, relative to docs/; a nested command without its own entry takes its
# parent's (`cluster up` -> `cluster`)
PAGES: dict[tuple[str, ...], str] = {
    (): "reference/cli.md",
    ("setup",): "getting-started.md",
    ("cluster",): "getting-started.md",
    ("nemesis",): "faults/index.md",
    ("history",): "history.md",
    ("check",): "verdict.md",
    ("report",): "verdict.md",
    ("index",): "results-index.md",
    ("serve",): "results-index.md",
    ("upload",): "results-index.md",
    ("scenarios",): "reference/scenarios.md",
    ("run",): "getting-started.md",
    ("replay",): "replay-shrink-soak.md",
    ("shrink",): "replay-shrink-soak.md",
    ("soak",): "replay-shrink-soak.md",
    ("docs",): "index.md",
}


def page_of(command: tuple[str, ...]) -> str:
    """The docs page of `command`, or of its nearest parent that has one."""
    for n in range(len(command), -1, -1):
        if command[:n] in PAGES:
            return PAGES[command[:n]]
    raise KeyError(command)


def epilog(command: tuple[str, ...]) -> str:
    """The last sentence of `command`'s --help: the page that covers it."""
    return f"Docs ({SERVE_HINT}): docs/{page_of(command)}"
