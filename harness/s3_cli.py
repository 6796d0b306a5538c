"""`kafka-chaos upload RESULTS_ROOT s3://bucket/prefix`: runs already on disk (a CI artifact, a soak's windows, a
machine's results/) uploaded into a bucket, each run's completion marker last; runs already complete there are kept."""
from __future__ import annotations

import argparse

from kafka_chaos.base.errors import UsageError


def register(sub) -> None:
    p = sub.add_parser(
        "upload", help="upload local runs into s3://bucket/prefix, each run's completion marker last",
        description="Uploads every run under RESULTS_ROOT (or the one run RESULTS_ROOT is) to s3://bucket/prefix/"
                    "<run_id>/, file by file, then the run's complete.json last, so a reader never takes a half "
                    "uploaded run as complete. A run already complete in the bucket is skipped (--replace uploads it "
                    "again). Credentials from the standard AWS chain; AWS_ENDPOINT_URL for a server that is not AWS.")
    p.add_argument("root", metavar="RESULTS_ROOT", help="a results root, or one results directory")
    p.add_argument("url", metavar="S3_URL", help="s3://bucket/prefix")
    p.add_argument("--replace", action="store_true", help="upload runs already complete in the bucket again")
    p.set_defaults(func=_cmd_upload)


def _cmd_upload(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kafka_chaos.history import objstore
    from kafka_chaos.history.layout import is_run_dir, run_dirs

    url = objstore.location(args.url)
    if url is None:
        raise UsageError(f"{args.url!r} is not an s3:// URL", "kafka-chaos upload results s3://bucket/prefix")
    root, local = objstore.S3Root.parse(url), Path(args.root)
    runs = [local] if is_run_dir(local) else run_dirs(local)
    if not runs:
        raise UsageError(f"{local}: no results directory there", "pass a results root or one run's directory")
    fs = objstore.filesystem()
    objstore.check_reachable(root, fs=fs)
    done = skipped = 0
    for run in runs:
        if not args.replace and objstore.marker(root, run.name, fs=fs) is not None:
            skipped += 1
            continue
        objstore.upload_run(run, root, replace=args.replace, fs=fs)
        done += 1
        print(f"uploaded: {root.url}/{run.name} (complete)")
    print(f"{done} run(s) uploaded to {root.url}" + (f", {skipped} already complete there" if skipped else ""))
    return 0
