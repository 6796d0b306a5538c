"""What a judged run writes: anomalies.parquet's table and verdict.json."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa

from kafka_chaos.checkers import availability
from kafka_chaos.checkers.completeness import Completeness
from kafka_chaos.checkers.judge.rules import DRAIN_INDEPENDENT
from kafka_chaos.checkers.model import ModelResult
from kafka_chaos.checkers.reference import Counts
from kafka_chaos.history.meta import RunMeta
from kafka_chaos.history.schema import ANOMALIES_SCHEMA, ANOMALY_KINDS


def anomalies_table(judged: pd.DataFrame) -> pa.Table:
    """anomalies.parquet's table. Integer columns go through pandas' nullable integers: a float dtype that reached
    here (a concat of Int64 with float64 gives Float64) would be stored as such in the pandas metadata, and readers
    would fail to cast nanosecond times back (beyond 2^53)."""
    cols = {f.name: judged[f.name] if f.name in judged else pd.Series(None, index=judged.index, dtype=object)
            for f in ANOMALIES_SCHEMA}
    ints = {f.name: "Int32" if f.type == pa.int32() else "Int64" for f in ANOMALIES_SCHEMA
            if pa.types.is_integer(f.type)}
    frame = pd.DataFrame(cols, copy=False).astype({"durability": object, "classification": object, "reason": object,
                                                   "excuse": object, "cause_id": object, **ints}, copy=False)
    return pa.Table.from_pandas(frame, schema=ANOMALIES_SCHEMA, preserve_index=False)


def _timed(disagreement: dict, start_ns: int | None) -> dict:
    """A disagreement with its time in seconds from the run's start (`t_s`), for `check`'s lines and the report."""
    if not start_ns or disagreement.get("t_ns") is None:
        return disagreement
    return {**disagreement, "t_s": round((int(disagreement["t_ns"]) - int(start_ns)) / 1e9, 3)}


def build_verdict(meta: RunMeta, judged: pd.DataFrame, counts: Counts, model: ModelResult,
                  complete: Completeness | None = None, available: dict | None = None,
                  disagreements: list[dict] = ()) -> dict:
    complete = complete or Completeness(meta.partitions)
    available = available or availability.summary([], meta.partitions, None, availability.DEFAULT_THRESHOLD_S,
                                                   None)
    per_kind = judged["kind"].astype(object).value_counts()
    anomalies = {k: int(per_kind.get(k, 0)) for k in ANOMALY_KINDS}
    violating = judged[judged["classification"] == "violation"]
    violations = {k: int(v) for k, v in violating["kind"].value_counts().items() if v}
    lost = judged[judged["kind"] == "lost"]
    if complete.status == "incomplete" and not set(violations) & set(DRAIN_INDEPENDENT):
        valid, status = None, "incomplete"
    else:
        valid = not violations
        status = "valid" if valid else "invalid"
    return {
        "run_id": meta.run_id,
        "valid": valid,
        "status": status,
        "incomplete": complete.as_dict(),
        "anomalies": anomalies,
        "violations": violations,
        "counts": counts.as_dict(),
        "unavailable": available["unavailable_share"],
        "availability": available,
        "predicted": model.predictions(),
        "observed": {"lost": len(lost), "lost_at_risk": int((lost["durability"] == "at_risk").sum()),
                     "lost_guaranteed": int((lost["durability"] == "guaranteed").sum()),
                     "lost_after_read": anomalies["lost_after_read"],
                     "duplicate": anomalies["duplicate"], "nonmonotonic_send": anomalies["nonmonotonic_send"],
                     "unavailable": available["unavailable_share"], "stalled_s": available["stalled_s"],
                     "longest_stall_s": available["longest_s"]},
        "model_disagreements": [_timed(d, meta.start_ns) for d in list(disagreements)[:1000]],
        "model": {**model.config.as_dict(),
                  "risk_windows": [[w.start_ns, w.end_ns, w.partition, list(w.acks), w.reason]
                                   for w in model.risk[:1000]],
                  "events": model.events[:1000]},
        "meta": {"scenario": meta.scenario, "seed": meta.seed, "command": meta.command},
    }
