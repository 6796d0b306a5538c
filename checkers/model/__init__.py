"""The ISR model of Kafka's replication protocol, and its check against what the cluster visibly did.

config (what the model is told), releases (which rule applies in which Kafka release), state / controller /
replication / sim (the state machine, by concern), windows (segment and window arithmetic), result (what it
predicts, and what the judge asks), run (run_model), observed (the events cluster.parquet shows, set against the
predicted ones).
"""
from kafka_chaos.checkers.model.config import ACKED, FaultEffect, ModelConfig, worst_case_onsets
from kafka_chaos.checkers.model.result import ModelResult
from kafka_chaos.checkers.model.run import run_model
from kafka_chaos.checkers.model.windows import Window

__all__ = ["ACKED", "FaultEffect", "ModelConfig", "ModelResult", "Window", "run_model", "worst_case_onsets"]
