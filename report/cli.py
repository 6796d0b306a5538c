"""`kafka-chaos report RESULTS_DIR` and `kafka-chaos report --suite RESULTS_ROOT`."""
from __future__ import annotations

import argparse
from pathlib import Path

from kafka_chaos.base.errors import UsageError


def register(sub) -> None:
    parser = sub.add_parser(
        "report", help="write the HTML loss report of a run, a soak's page, or the suite page of many",
        description="Writes RESULTS_DIR/report.html, a self-contained page that works offline (for a soak's "
                    "directory, soak.html: the running verdict window by window); with --suite, "
                    "writes RESULTS_ROOT/index.html with one row per run (writing missing reports too).")
    parser.add_argument("results_dir", nargs="?", metavar="RESULTS_DIR", help="a results directory, results/<run_id>")
    parser.add_argument("--suite", metavar="RESULTS_ROOT", help="the directory holding many results directories")
    parser.add_argument("--no-build", action="store_true",
                        help="with --suite: list the runs without writing their missing reports")
    parser.set_defaults(func=_cmd_report)



def _cmd_report(args: argparse.Namespace) -> int:
    # imported here so `kafka-chaos --help` does not pay for pandas and plotly
    from kafka_chaos.report.page import write_report
    from kafka_chaos.report.suite import SuiteOptions, write_suite

    if bool(args.results_dir) == bool(args.suite):
        raise UsageError("give either RESULTS_DIR or --suite RESULTS_ROOT",
                         "kafka-chaos report results/<run_id>   or   kafka-chaos report --suite results")
    from kafka_chaos.history.objstore import location

    if location(args.suite or args.results_dir):     # s3://: staged locally, written, uploaded back
        from kafka_chaos.report.s3_index import report_in_bucket

        print(report_in_bucket(args.suite or args.results_dir, suite=bool(args.suite), build=not args.no_build))
        return 0
    if args.suite:
        path = write_suite(args.suite, SuiteOptions(build_reports=not args.no_build))
    elif (Path(args.results_dir) / "soak.json").is_file():
        from kafka_chaos.report.soak import write_soak_page

        path = write_soak_page(args.results_dir)
    else:
        path = write_report(args.results_dir)
    print(path)
    return 0
