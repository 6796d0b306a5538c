"""Spark reading s3a:// paths: the jars matched to pyspark's Hadoop, from Maven Central, and the settings that take
the endpoint and credentials from the standard AWS chain. `check s3://bucket/prefix` has its Spark jobs read each
run's history straight from the bucket through them (`session`), so the executors of a cluster need no disk of the
driver's; the driver still stages each run (history/objstore.py) for its own reads (meta.json, the model's faults
and samples, the node logs, Parquet footers, the per-client table). Tested against the real local server, on local
Spark and on a standalone cluster (tests/history/test_objstore_s3a.py).

pyspark 4.x ships Hadoop 3.5.0's client jars; hadoop-aws 3.5.0 compiles against the AWS SDK v2 bundle 2.35.4 and the
S3 analytics accelerator 1.3.1 (hadoop-project 3.5.0's pom), so those are the versions to fetch, not the newest.
"""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

from kafka_chaos.base.errors import EnvironmentProblem

log = logging.getLogger(__name__)

PROVIDER_KEY = "spark.hadoop.fs.s3a.aws.credentials.provider"
HADOOP_VERSION = "3.5.0"          # pyspark's jars/hadoop-client-api-3.5.0.jar
S3A_JARS = (
    f"org.apache.hadoop:hadoop-aws:{HADOOP_VERSION}",
    "software.amazon.awssdk:bundle:2.35.4",
    "software.amazon.s3.analyticsaccelerator:analyticsaccelerator-s3:1.3.1",
)


def pyspark_hadoop_version() -> str | None:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    found = sorted(jars.glob("hadoop-client-api-*.jar"))
    return found[0].stem.removeprefix("hadoop-client-api-") if found else None


def jar_path(coordinate: str) -> Path:
    group, artifact, version = coordinate.split(":")
    return Path.home() / ".m2" / "repository" / Path(*group.split(".")) / artifact / version / \
        f"{artifact}-{version}.jar"


def resolve_jars() -> list[Path]:
    """The three jars in the local Maven repository, fetched from Maven Central if missing (the bundle is ~650 MB,
    once)."""
    if pyspark_hadoop_version() not in (None, HADOOP_VERSION):
        raise EnvironmentProblem(f"pyspark ships Hadoop {pyspark_hadoop_version()}, the s3a jars are pinned to "
                                 f"{HADOOP_VERSION}", "update checkers/s3a.py's versions to that Hadoop's pom")
    paths = []
    for coordinate in S3A_JARS:
        path = jar_path(coordinate)
        if not path.is_file():
            if not shutil.which("mvn"):
                raise EnvironmentProblem("Maven is missing (it fetches the s3a jars)", "bash scripts/setup.sh")
            done = subprocess.run(["mvn", "-q", "-B", "dependency:get", f"-Dartifact={coordinate}",
                                   "-Dtransitive=false"], capture_output=True, text=True)
            if done.returncode != 0 or not path.is_file():
                raise EnvironmentProblem(f"could not fetch {coordinate} from Maven Central: "
                                         f"{(done.stdout + done.stderr).strip()[-300:]}",
                                         "check access to Maven Central and retry")
        paths.append(path)
    return paths


def s3a_conf() -> dict[str, str]:
    """Spark settings for s3a://: the AWS SDK's default chain for credentials (environment, profile, role: never a
    key in the settings), the endpoint and region from AWS_ENDPOINT_URL[_S3] and AWS_REGION (path-style for a
    server that is not AWS)."""
    conf = {"spark.jars": ",".join(map(str, resolve_jars())),
            PROVIDER_KEY:
                "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider",
            "spark.hadoop.fs.s3a.endpoint.region": os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        conf.update({"spark.hadoop.fs.s3a.endpoint": endpoint, "spark.hadoop.fs.s3a.path.style.access": "true",
                     "spark.hadoop.fs.s3a.connection.ssl.enabled": str(endpoint.startswith("https")).lower()})
    return conf


def to_s3a(url: str) -> str:
    """s3://bucket/key -> s3a://bucket/key (Hadoop's connector answers to s3a)."""
    if not url.startswith("s3://"):
        raise ValueError(f"not an s3:// URL: {url!r}")
    return "s3a://" + url[len("s3://"):]


def session(master: str | None, sources: dict[str, str]):
    """This process's Spark session, started with the s3a jars and settings when some run's history is to be read
    from a bucket (`sources`: {run_id: its s3:// URL}); returns it and the sources its jobs read, as s3a:// URLs.

    Where s3a cannot be had, the staged copies serve a local check (with a warning), and a check on a cluster stops
    with the cause (exit 2): its executors cannot read the driver's disk. A session already running in this process
    without the s3a settings (a test's, a warm `run --repeat` session) is used as it is, on the staged copies."""
    from kafka_chaos.checkers.spark.session import get_spark, resolve_master

    if not sources:
        return get_spark(master), {}
    try:
        conf = s3a_conf()
    except EnvironmentProblem as e:
        resolved = resolve_master(master)
        if resolved is not None and not resolved.startswith("local"):
            raise
        log.warning("reading the bucket's runs from their staged copies, not through s3a: %s (%s)", e.cause,
                    e.remedy)
        return get_spark(master), {}
    spark = get_spark(master, extra_conf=conf)
    if spark.sparkContext.getConf().get(PROVIDER_KEY, None) is None or not has_s3a(spark):
        why = "this process's Spark session was started without the s3a jars and settings (under spark-submit: " \
              f"--jars with {', '.join(c.split(':')[1] for c in S3A_JARS)})"
        if not spark.sparkContext.master.startswith("local"):
            raise EnvironmentProblem(why, "its executors cannot read the driver's staged copies: give the jars "
                                          "(docs/spark-cluster.md)")
        log.warning("%s; reading the staged copies", why)
        return spark, {}
    return spark, {run_id: to_s3a(url) for run_id, url in sources.items()}


def has_s3a(spark) -> bool:
    """Whether the driver's JVM can load Hadoop's s3a file system (its jars on the classpath)."""
    sc = spark.sparkContext
    try:
        sc._jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass("s3a", sc._jsc.hadoopConfiguration())
    except Exception:                  # py4j's Py4JJavaError: the class is not there
        return False
    return True
