"""`kafka-chaos index ROOT` (write ROOT/index.html) and `kafka-chaos serve ROOT` (the same, served on loopback)."""
from __future__ import annotations

import argparse
import functools
import http.server
import logging
from pathlib import Path

from kafka_chaos.base.errors import UsageError
from kafka_chaos.base.serving import serve_until_interrupted

log = logging.getLogger(__name__)
DEFAULT_PORT = 8080


def register(sub) -> None:
    index = sub.add_parser(
        "index", help="write ROOT/index.html: every run of a results root, with filters, sorting and trends",
        description="Writes RESULTS_ROOT/index.html, one static self-contained page (relative links only: it works "
                    "opened from disk or inside a downloaded CI artifact) listing every run under the root and one "
                    "level of suites below it: scenario, Kafka version, metadata mode, client, acks, min ISR, "
                    "verdict, lost, stalls and a link to each report; filters and sorting; each configuration's "
                    "verdicts over time. Reads only meta.json and verdict.json; reports are not written (`report "
                    "--suite` writes the missing ones, then this page).")
    index.add_argument("root", metavar="RESULTS_ROOT", help="a directory of results directories (or of suites), or "
                                                            "s3://bucket/prefix (index.html written there)")
    index.set_defaults(func=_cmd_index)
    serve = sub.add_parser(
        "serve", help="write the results index and serve RESULTS_ROOT on loopback",
        description="Writes RESULTS_ROOT/index.html as `kafka-chaos index` does, then serves the root read-only "
                    "over HTTP on 127.0.0.1 until interrupted (Ctrl-C). Nothing is listened on beyond loopback; "
                    "a path that leads out of the root (a symlink) is not served.")
    serve.add_argument("root", metavar="RESULTS_ROOT")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; "
                                                                       "0 picks a free one)")
    serve.set_defaults(func=_cmd_serve)


def _cmd_index(args: argparse.Namespace) -> int:
    from kafka_chaos.history.objstore import location
    from kafka_chaos.report.index import write_index

    if location(args.root):
        from kafka_chaos.report.s3_index import write_s3_index

        print(write_s3_index(location(args.root)))
        return 0
    print(write_index(_root(args.root)))
    return 0


def _root(text: str) -> Path:
    root = Path(text)
    if not root.is_dir():
        raise UsageError(f"{root} is not a directory", "pass a results root: the directory holding results "
                                                       "directories (e.g. results)")
    return root


class RootHandler(http.server.SimpleHTTPRequestHandler):
    """Files under the root only: a path that resolves outside it (through a symlink) is answered 404."""

    def send_head(self):
        from kafka_chaos.base.names import within

        if within(self.directory, self.translate_path(self.path)) is None:
            self.send_error(404, "not under the served root")
            return None
        return super().send_head()

    def log_message(self, format: str, *args) -> None:
        log.debug("serve: " + format, *args)


def make_server(root: Path, port: int) -> http.server.ThreadingHTTPServer:
    """A server of `root` on 127.0.0.1:port (0: any free port), not yet serving."""
    handler = functools.partial(RootHandler, directory=str(root.resolve()))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


def _cmd_serve(args: argparse.Namespace) -> int:
    from kafka_chaos.report.index import write_index

    root = _root(args.root)
    write_index(root)
    try:
        server = make_server(root, args.port)
    except OSError as e:
        raise UsageError(f"cannot listen on 127.0.0.1:{args.port}: {e.strerror}",
                         "pick another port with --port (0 picks a free one)") from None
    return serve_until_interrupted(server, str(root))
