"""Synthetic results directories in the exact history format, for tests and benchmarks (never the product path).

stream: a clean, realistic history of any size, written in chunks (`write_synthetic_run`); inject: exactly k
anomalies of a kind added to one (`inject_anomalies`); sample: a small *checked* run, with a hand-made verdict and
anomalies, for the report's tests before and apart from the checker (`write_sample_run`); node_log: the KRaft
controller's fencing lines of a node log (`fencing_line`).
"""
from kafka_chaos.history.synthetic.inject import inject_anomalies
from kafka_chaos.history.synthetic.node_log import fencing_line
from kafka_chaos.history.synthetic.sample import SampleRun, write_sample_run
from kafka_chaos.history.synthetic.stream import SyntheticSpec, write_synthetic_run

__all__ = ["SampleRun", "SyntheticSpec", "fencing_line", "inject_anomalies", "write_sample_run", "write_synthetic_run"]
