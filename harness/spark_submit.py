"""The `kafka-chaos` command as a file for spark-submit, which runs a Python file, not a module or a console script:

    spark-submit --master yarn "$(python -m kafka_chaos.harness.spark_submit)" check /shared/results/RUN

Run as a module it prints its own path; run as a file it is the CLI, and the session takes spark-submit's master.
"""
from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    if __spec__ is not None:                       # python -m kafka_chaos.harness.spark_submit: where am I?
        print(Path(__file__).resolve())
        sys.exit(0)
    # As a file, Python put this folder first on sys.path; the package is what must be found, not its folders.
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        del sys.path[0]
    from kafka_chaos.harness.cli import main

    sys.exit(main())
