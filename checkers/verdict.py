"""Judge anomaly instances with the ISR model: which are violations, and the verdict.json of a run.

The finders (Spark or the pandas reference) only say what happened; this module says whether the run's
configuration and faults permitted it, following the rules of issue 5:
lost is a violation only for a write the model classed guaranteed; duplicate and nonmonotonic_send only for an
idempotent producer; phantom, divergent, failed_read and offset_mismatch unless a truncation the model predicted
explains them; poll_skip in assign mode.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from checkers.history_io import RunMeta
from checkers.isr_model import ModelResult
from checkers.reference import Counts
from checkers.schema import ANOMALIES_SCHEMA, ANOMALY_KINDS

EXPLAINED_BY_TRUNCATION = ("phantom", "divergent", "failed_read", "offset_mismatch")
SEND_KINDS = ("lost", "duplicate", "offset_mismatch", "nonmonotonic_send", "failed_read", "recovered")


def _describe(row) -> str:
    kind = row["kind"]
    if kind == "lost":
        return f"acked at offset {_fmt(row['offset'])} with acks={row['acks']}, never read although the final " \
               f"drain read partition {_fmt(row['partition'])} that far"
    if kind == "duplicate":
        return f"read at {row['multiplicity']} positions"
    if kind == "phantom":
        return "read, but no send carries this value"
    if kind == "divergent":
        return f"{row['multiplicity']} different values read at this offset"
    if kind == "failed_read":
        return "send failed definitely, yet the value was read"
    if kind == "offset_mismatch":
        return f"acked at offset {_fmt(row['offset'])}, read only elsewhere"
    if kind == "nonmonotonic_send":
        return "acked at a lower offset than the producer's previous send to this partition"
    if kind == "poll_skip":
        return f"consumer {row['consumer']} jumped from offset {row['from_offset']} to {row['offset']} over " \
               f"offsets others read"
    return "indeterminate send whose value was read"


def _fmt(x) -> str:
    return "?" if x is None or pd.isna(x) else str(int(x))


def judge(instances: pd.DataFrame, meta: RunMeta, model: ModelResult) -> pd.DataFrame:
    """The anomalies.parquet rows: instances plus classification, durability and reason."""
    out = instances.copy()
    n = len(out)
    classification = np.full(n, "allowed", dtype=object)
    durability = np.full(n, None, dtype=object)
    reason = np.array([_describe(r) for _, r in out.iterrows()], dtype=object) if n else np.array([], object)

    is_send = out["kind"].isin(SEND_KINDS).to_numpy() & out["acks"].notna().to_numpy()
    if is_send.any():
        cls = model.classify(out[is_send])
        durability[is_send] = cls["durability"].to_numpy()
        model_reason = cls["reason"].to_numpy()
    kind = out["kind"].to_numpy(dtype=object)
    idem = out["idempotent"].fillna(False).to_numpy(dtype=bool)
    send_index = np.cumsum(is_send) - 1
    for i in range(n):
        k = kind[i]
        if k == "lost":
            why = model_reason[send_index[i]]
            if durability[i] == "guaranteed":
                classification[i] = "violation"
                reason[i] += f"; the model classed it guaranteed: {why}"
            else:
                reason[i] += f"; at risk: {why}"
        elif k in ("duplicate", "nonmonotonic_send"):
            if idem[i]:
                classification[i] = "violation"
                reason[i] += "; the producer is idempotent, which forbids this"
            else:
                reason[i] += "; allowed: a producer without idempotence may retry and reorder"
        elif k in EXPLAINED_BY_TRUNCATION:
            trunc = model.explaining_truncation(out["partition"].iat[i], out["offset"].iat[i])
            if trunc is None:
                classification[i] = "violation"
                reason[i] += "; no truncation the model predicts explains it"
            else:
                reason[i] += f"; explained by a predicted truncation: {trunc.reason}"
        elif k == "poll_skip":
            if meta.consumer_mode == "assign":
                classification[i] = "violation"
                reason[i] += "; assign mode: nothing may move the position past unread records"
            else:
                reason[i] += "; allowed in subscribe mode: a rebalance may commit past unread records"
        else:
            reason[i] += "; counted, not an anomaly"
    out["classification"] = classification
    out["durability"] = durability
    out["reason"] = reason
    return out


def anomalies_table(judged: pd.DataFrame) -> pa.Table:
    cols = {f.name: judged[f.name] for f in ANOMALIES_SCHEMA}
    frame = pd.DataFrame(cols).astype({"durability": object, "classification": object, "reason": object})
    return pa.Table.from_pandas(frame, schema=ANOMALIES_SCHEMA, preserve_index=False)


def unavailable_share(unsettled: pd.DataFrame, total_sends: int, model: ModelResult) -> float:
    """Share of all sends that failed or timed out while the model predicted their partition writable."""
    if total_sends == 0 or not len(unsettled):
        return 0.0
    t0 = unsettled["t_invoke_ns"].astype("int64").to_numpy()
    t1 = unsettled["t_complete_ns"].fillna(unsettled["t_invoke_ns"]).astype("int64").to_numpy()
    part = unsettled["partition"].fillna(-1).astype("int64").to_numpy()
    acks = unsettled["acks"].astype(object).to_numpy()
    expected = np.zeros(len(unsettled), dtype=bool)
    for w in model.unavailable:
        expected |= ((part == w.partition) | (part < 0)) & np.isin(acks, w.acks) & (t0 <= w.end_ns) & \
            (t1 >= w.start_ns)
    return float((~expected).sum()) / total_sends


def build_verdict(meta: RunMeta, judged: pd.DataFrame, counts: Counts, unsettled: pd.DataFrame,
                  model: ModelResult) -> dict:
    anomalies = {k: int((judged["kind"] == k).sum()) for k in ANOMALY_KINDS}
    violating = judged[judged["classification"] == "violation"]
    violations = {k: int(v) for k, v in violating["kind"].value_counts().items() if v}
    lost = judged[judged["kind"] == "lost"]
    unavailable = unavailable_share(unsettled, counts.sends, model)
    return {
        "run_id": meta.run_id,
        "valid": not violations,
        "anomalies": anomalies,
        "violations": violations,
        "counts": counts.as_dict(),
        "unavailable": unavailable,
        "predicted": model.predictions(),
        "observed": {"lost": len(lost), "lost_at_risk": int((lost["durability"] == "at_risk").sum()),
                     "lost_guaranteed": int((lost["durability"] == "guaranteed").sum()),
                     "duplicate": anomalies["duplicate"], "nonmonotonic_send": anomalies["nonmonotonic_send"],
                     "unavailable": unavailable},
        "model": {**model.config.as_dict(),
                  "risk_windows": [[w.start_ns, w.end_ns, w.partition, list(w.acks), w.reason]
                                   for w in model.risk[:1000]],
                  "events": model.events[:1000]},
        "meta": {"scenario": meta.scenario, "seed": meta.seed, "command": meta.command},
    }
