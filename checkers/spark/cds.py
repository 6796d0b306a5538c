"""A class-data-sharing archive of the classes Spark's driver loads, so a cold check's JVM maps them from one file
instead of finding, parsing, verifying and linking them one by one from 280 jars.

A `kafka-chaos check` is one process with one JVM: before this archive, ~13 s went from the JVM's launch to the
end of a first trivial job, ~4.5 s less with it (README, "Measured figures"). The archive is the JVM's own dynamic
archive (JEP 350, JDK 13+): a training session (`python -m kafka_chaos.checkers.spark.cds`, run by
scripts/setup.sh) runs the anomaly pass on a small synthetic history with -XX:ArchiveClassesAtExit, and its JVM
writes the classes it loaded when it exits (tens of seconds of CPU, which is why a check never does it on its own).

Its name is a digest of the Java runtime and of Spark's jars (names, sizes, times): another JDK or pyspark needs
another archive, and gets none until the training runs again. A JVM that cannot map the one it is given (a
mismatch the digest missed, a damaged file) starts as it would without it (-Xshare:auto, the default); the JVM's
CDS logging is off, so nothing of this reaches the output either way.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kafka_chaos.base.paths import cache_dir

DISABLE_ENV = "KAFKA_CHAOS_SPARK_CDS"       # "0": start the driver's JVM without the archive
QUIET = "-Xlog:cds=off,cds+dynamic=off"     # the JVM's CDS warnings (signed jars skipped, ...) stay off stdout
TRAINING_SENDS = 20_000
KEEP = 4                                    # archives kept in the cache (one per checkout's venv and JDK, ~180 MB)
OWNER = ".jars"                             # beside an archive: the jars folder (one venv's pyspark) it was made for


def _spark_jars() -> Path:
    import pyspark
    return Path(pyspark.__file__).parent / "jars"


def _java() -> Path | None:
    """The java spark-submit runs: JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else (Path(p) if (p := shutil.which("java")) else None)
    return found.resolve() if found and found.exists() else None


def archive_path() -> Path | None:
    """Where this Java runtime's and Spark's archive lives (it may not exist yet); None without a java."""
    java = _java()
    if java is None:
        return None
    digest = hashlib.sha256()
    runtime = java.parent.parent
    for part in (java, *sorted((runtime / "lib").glob("**/libjvm.so")), runtime / "release"):
        if part.exists():
            st = part.stat()
            digest.update(f"{part}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    jars = _spark_jars()
    for jar in sorted(jars.glob("*.jar")):
        st = jar.stat()
        digest.update(f"{jar}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return cache_dir() / "spark-cds" / f"driver-{digest.hexdigest()[:20]}.jsa"


def driver_java_options() -> str | None:
    """The driver JVM's options that map the archive, or None (no archive yet, no java, or turned off)."""
    if os.environ.get(DISABLE_ENV) == "0":
        return None
    path = archive_path()
    if path is None or not path.is_file():
        return None
    try:
        os.utime(path)      # last used now: the cache evicts by last use, not by when an archive was trained
    except OSError:
        pass                # a read-only cache: the archive maps all the same
    return f"-XX:SharedArchiveFile={path} {QUIET}"


def train(sends: int = TRAINING_SENDS) -> Path | None:
    """Write the archive if it is missing: a session runs the anomaly pass on a synthetic history, its JVM exits and
    dumps what it loaded to a temporary name, renamed into place once the JVM is gone. Returns the archive."""
    target = archive_path()
    if target is None:
        print("spark-cds: no java found (JAVA_HOME or PATH): nothing to archive", file=sys.stderr)
        return None
    if target.is_file():
        _note_owner(target)          # archives trained before owners were noted get one
        return target
    from pyspark import SparkContext

    if SparkContext._gateway is not None:     # its JVM would neither dump nor be ours to stop
        raise RuntimeError("spark_cds.train() needs a process without a Spark JVM: run python -m "
                           "kafka_chaos.checkers.spark.cds")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.stem}.{os.getpid()}.partial")

    training_jvm(f"-XX:ArchiveClassesAtExit={partial} {QUIET}", sends)
    if not partial.is_file() or partial.stat().st_size == 0:
        print(f"spark-cds: the JVM wrote no archive to {partial}", file=sys.stderr)
        return None
    os.replace(partial, target)
    _note_owner(target)
    prune(target.parent)
    return target


def training_jvm(java_options: str, sends: int = TRAINING_SENDS) -> None:
    """Start Spark's JVM with `java_options`, run the anomaly pass on a synthetic history of `sends` sends, and wait
    for the JVM to exit: what it writes at exit (a class-data archive, an AOT cache) is complete on return."""
    from pyspark import SparkContext

    from kafka_chaos.checkers.spark import get_spark
    from kafka_chaos.checkers.spark.anomalies import find_anomalies_spark
    from kafka_chaos.history.synthetic import write_synthetic_run

    with tempfile.TemporaryDirectory(prefix="kc-spark-cds-") as tmp:
        run = Path(tmp) / "run"
        write_synthetic_run(run, sends=sends, partitions=3, seed=0, faults=True)
        spark = get_spark(java_options=java_options)
        find_anomalies_spark(spark, {"training": run})
        spark.stop()
        proc = SparkContext._gateway.proc
        SparkContext._gateway.shutdown()
        proc.stdin.close()
        proc.wait()


def prune(folder: Path, keep: int = KEEP) -> list[Path]:
    """Remove the archives of venvs that are gone, then all but the `keep` last used (each fresh clone's venv needs
    its own, and a new clone's training must not evict the archive of the checkout in daily use: it did, by
    training time, 2026-11-28), and partial ones a training left behind over an hour ago; returns what was
    removed."""
    archives = sorted(folder.glob("driver-*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    abandoned = [p for p in archives if _owner_gone(p)]
    live = [p for p in archives if p not in abandoned]
    stale = [p for p in folder.glob("driver-*.partial") if p.stat().st_mtime < time.time() - 3600]
    removed = abandoned + live[keep:] + stale
    for path in removed:
        path.unlink(missing_ok=True)
        path.with_suffix(OWNER).unlink(missing_ok=True)
    return removed


def _note_owner(archive: Path) -> None:
    """Beside `archive`, the jars folder it serves (`prune` drops it once that folder is gone); best effort."""
    try:
        archive.with_suffix(OWNER).write_text(str(_spark_jars()))
    except OSError:
        pass             # without a note the archive is never taken for abandoned: only evicted by last use


def _owner_gone(archive: Path) -> bool:
    """The jars folder `archive` was trained for no longer exists (its clone was deleted); unknown owner: False."""
    owner = archive.with_suffix(OWNER)
    try:
        return not Path(owner.read_text().strip()).is_dir()
    except OSError:
        return False


if __name__ == "__main__":
    made = train()
    print(f"spark-cds: {made}" if made else "spark-cds: no archive (the checks run as well without one)")
