"""`run --results s3://bucket/prefix`: the run journals into a local staging root as ever (crash-safe, on local disk),
and when it ends every run directory staged is uploaded under the prefix, each run's completion marker last
(history/objstore.py). The bucket is tried before the run starts, so a wrong URL or missing credentials cost no run.
A run killed before its upload ended (kill -9, a lost runner) leaves no complete run in the bucket, and its staging
root on local disk, named when the run starts: `kafka-chaos upload STAGING s3://...` completes it.
"""
from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

from kafka_chaos.base.errors import HarnessError
from kafka_chaos.history import objstore
from kafka_chaos.history.layout import run_dirs

log = logging.getLogger(__name__)


def run_into_bucket(args, run_command) -> int:
    """Runs `run_command(args)` with args.results a local staging root, then uploads what it wrote."""
    url = objstore.location(args.results)
    root = objstore.S3Root.parse(url)
    fs = objstore.filesystem()
    objstore.check_reachable(root, fs=fs)     # the bucket there, credentials accepted, before a long run
    stage = Path(tempfile.mkdtemp(prefix="kafka-chaos-upload-"))
    args.results = stage
    log.info("journal staged in %s; uploaded to %s when the run ends (if it is cut short: kafka-chaos upload %s %s)",
             stage, root.url, stage, root.url)
    code = None
    try:
        code = run_command(args)
    finally:
        uploaded = upload_staged(stage, root, fs)
        if uploaded == len(run_dirs(stage)):
            shutil.rmtree(stage, ignore_errors=True)
        else:
            log.error("kept the staged results in %s (not every run was uploaded)", stage)
    return code


def upload_staged(stage: Path, root: objstore.S3Root, fs) -> int:
    done = 0
    for run_dir in run_dirs(stage):
        try:
            objstore.upload_run(run_dir, root, fs=fs)
        except HarnessError as e:
            log.error("upload of %s to %s failed: %s (%s)", run_dir.name, root.url, e.cause, e.remedy)
            continue
        done += 1
        print(f"uploaded: {root.url}/{run_dir.name} (complete)")
    return done
