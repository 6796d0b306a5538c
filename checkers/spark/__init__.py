"""The anomaly definitions on Spark, in their own subpackage beside the pandas reference (checkers/reference.py).

session: the one SparkSession factory (`get_spark`, re-exported here); anomalies: the pass over one run or many;
queries, hub, buckets, divergent: its queries; collect: loading histories and collecting small answers; cds and
quiet: the driver JVM's class-data archive and its silenced start-up. Every per-value kind's predicate comes from
history/kinds.py, the one declaration the DuckDB yardstick also evaluates.
"""
from kafka_chaos.checkers.spark.session import get_spark

__all__ = ["get_spark"]
