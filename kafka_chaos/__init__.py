"""kafka-chaos: Jepsen-style chaos tests against a real Apache Kafka cluster in Docker.

One installed namespace over the repository's top-level folders (pyproject.toml maps kafka_chaos.harness to
harness/, and so on), so the import names cannot clash with other distributions' `harness` or `nemesis`.
"""
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kafka-chaos")
except PackageNotFoundError:          # run from a checkout that was never installed
    __version__ = "0+unknown"
