"""`kafka-chaos docs`: build the documentation site (MkDocs + Material, mkdocs.yml over docs/) strictly, then serve
it on loopback until Ctrl-C; `--out DIR` builds it there and stops. The site's sources live in a checkout, not in
the installed package: run it from the repository (its generated reference pages: harness/docs_gen.py)."""
from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from kafka_chaos.base.errors import EnvironmentProblem, UsageError
from kafka_chaos.base.serving import serve_until_interrupted

HOST = "127.0.0.1"


def checkout_root() -> Path:
    """The repository holding mkdocs.yml and docs/: the one this package runs from (harness/ is a top-level folder)."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "mkdocs.yml").is_file() or not (root / "docs").is_dir():
        raise EnvironmentProblem(f"no mkdocs.yml and docs/ beside {Path(__file__).resolve().parent}: the site's "
                                 "sources are in the repository, not in an installed wheel",
                                 "run `kafka-chaos docs` from a checkout's virtualenv (bash scripts/setup.sh), or "
                                 "read the Markdown in the repository's docs/")
    return root


def build(out: Path, root: Path | None = None) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of the checkout into `out`: a warning (a broken link, a page missing from the nav's
    files) fails it. Returns the finished process (its output captured)."""
    root = root or checkout_root()
    try:
        import material  # noqa: F401  (the theme; mkdocs itself comes with it)
        import mkdocs  # noqa: F401
    except ImportError:
        raise EnvironmentProblem("MkDocs or its Material theme is not installed in this environment",
                                 "bash scripts/setup.sh --test (or: pip install mkdocs mkdocs-material)") from None
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--config-file",
                           str(root / "mkdocs.yml"), "--site-dir", str(out)],
                          cwd=root, capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})     # Material's end-of-life banner


def register(sub) -> None:
    p = sub.add_parser("docs", help="build the documentation site and serve it on loopback",
                       description="Build the documentation site (mkdocs build --strict over the checkout's docs/) "
                                   f"and serve it at http://{HOST}:PORT/ until Ctrl-C.")
    p.add_argument("--port", type=int, default=8000, help="loopback port to serve on (default 8000; 0: any free one)")
    p.add_argument("--out", type=Path, metavar="DIR", help="build the site into DIR and stop, serving nothing")
    p.set_defaults(func=_cmd_docs)


def _cmd_docs(args) -> int:
    if not 0 <= args.port < 65536:
        raise UsageError(f"--port {args.port} is not a TCP port", "pass 1-65535 (0: any free port), e.g. --port 8000")
    if args.out:
        _built(build(args.out))
        print(f"site built in {args.out}")
        return 0
    with tempfile.TemporaryDirectory(prefix="kafka-chaos-docs-") as tmp:
        _built(build(Path(tmp)))
        handler = functools.partial(_QuietHandler, directory=tmp)
        try:
            server = http.server.ThreadingHTTPServer((HOST, args.port), handler)
        except OSError as e:
            raise EnvironmentProblem(f"cannot listen on {HOST}:{args.port}: {e.strerror}",
                                     "pick a free port with --port") from None
        return serve_until_interrupted(server, "the documentation")


def _built(done: subprocess.CompletedProcess) -> None:
    if done.returncode != 0:
        raise EnvironmentProblem(f"mkdocs build --strict failed:\n{(done.stderr or done.stdout).strip()}",
                                 "fix the page or link it names (docs/, mkdocs.yml); generated pages: "
                                 "python -m kafka_chaos.harness.docs_gen")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):     # noqa: A002 (the base class's name)
        pass
