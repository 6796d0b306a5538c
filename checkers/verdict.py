"""Judge anomaly instances with the ISR model: which are violations, and the verdict.json of a run.

The finders (Spark or the pandas reference) only say what happened; this module says whether Kafka's own rules
permitted it (docs/history.md, "Judgement"):
- a record a consumer read was committed: losing it (lost after read, or a read acked write missing from the
  drain) or replacing it (divergent) takes an unclean election or a power loss the model predicts;
- an unread acked write may be lost only where the model classes it at risk;
- a phantom or a read of a definitely failed send is never explained by a truncation;
- duplicates and reordering break an idempotent producer's promise unless an unclean election or power loss
  voided it; an acks=all ack while the ISR was certainly below min.insync.replicas breaks Kafka's promise;
- a stall is reported, and a violation only beyond the user's --max-stall.
Lost kinds in partitions whose final drain did not complete are not counted, and such a run gets no verdict.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from kafka_chaos.checkers import availability, instances
from kafka_chaos.checkers.client import ClientVoids, epoch_bump_between
from kafka_chaos.checkers.completeness import Completeness
from kafka_chaos.checkers.model import ModelResult
from kafka_chaos.checkers.reference import Counts
from kafka_chaos.history.meta import RunMeta
from kafka_chaos.history.schema import ANOMALIES_SCHEMA, ANOMALY_KINDS

LOST_KINDS = ("lost", "lost_after_read")
SEND_KINDS = ("lost", "duplicate", "offset_mismatch", "nonmonotonic_send", "failed_read", "recovered",
              "min_isr_breach")


def _describe(row) -> str:
    kind = row["kind"]
    if kind == "lost":
        read = "" if pd.isna(row["t_read_ns"]) else ", read by a live consumer,"
        return f"acked at offset {_fmt(row['offset'])} with acks={row['acks']}{read} absent from the completed " \
               f"final drain of partition {_fmt(row['partition'])}"
    if kind == "lost_after_read":
        return f"read by a live consumer at offset {_fmt(row['offset'])}, absent from the completed final drain " \
               f"of partition {_fmt(row['partition'])}"
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
    if kind == "min_isr_breach":
        return "acks=all write acknowledged while the partition's ISR was below min.insync.replicas"
    if kind == "poll_skip":
        return f"consumer {row['consumer']} jumped from offset {row['from_offset']} to {row['offset']} over " \
               f"offsets others read"
    if kind == "stall":
        return f"no write acknowledged for {(row['t_complete_ns'] - row['t_invoke_ns']) / 1e9:.1f} s while " \
               f"writes were pending"
    return "indeterminate send whose value was read"


def _fmt(x) -> str:
    return "?" if x is None or pd.isna(x) else str(int(x))


def _int(x) -> int | None:
    return None if x is None or pd.isna(x) else int(x)


def stall_rows(found: list[availability.Stall]) -> pd.DataFrame:
    """Instance rows of kind `stall`: t_invoke_ns..t_complete_ns is the stall."""
    return instances.typed(pd.DataFrame({"kind": "stall", "partition": [s.partition for s in found],
                                         "t_invoke_ns": [s.start_ns for s in found],
                                         "t_complete_ns": [s.end_ns for s in found]}))


class Judge:
    """Classifies each instance of one run; holds what every rule needs."""

    def __init__(self, meta: RunMeta, model: ModelResult, complete: Completeness,
                 observed_losses: list[dict] = (), stalls: list[availability.Stall] = (),
                 max_stall_s: float | None = None, client_voids: ClientVoids | None = None):
        self.meta, self.model, self.complete = meta, model, complete
        self.client_voids = client_voids or ClientVoids()
        self.observed_losses = list(observed_losses)
        self.stalls = {(s.partition, s.start_ns): s for s in stalls}
        self.max_stall_s = max_stall_s

    def unpredicted(self, partition, offset) -> str:
        """Name the observed event (a high-watermark drop or an unclean election the model did not predict)
        that alone explains a lost committed record, if there is one."""
        if partition is None or pd.isna(partition):
            return ""
        for e in self.observed_losses:
            if int(e["partition"]) != int(partition):
                continue
            lo, hi = e.get("hw_after"), e.get("hw_before")
            if offset is None or pd.isna(offset) or lo is None or hi is None or lo <= int(offset) < hi:
                return f"; only an event the model did not predict explains it: {e['detail']}"
        return ""

    def committed_lost(self, row, why: str) -> tuple[str, str]:
        t_read, t_ack = _int(row["t_read_ns"]), _int(row["t_complete_ns"])
        cause = self.model.committed_loss_cause(int(row["partition"]), t_read if t_read is not None else t_ack,
                                                t_ack, _int(row["t_invoke_ns"]))
        if cause:
            return "allowed", f"; allowed: {cause}"
        return "violation", f"; {why}: only an unclean election or a power loss may remove a committed record, " \
                            f"and the model predicts none that could" + self.unpredicted(row["partition"],
                                                                                         row["offset"])

    def rule(self, row, durability: str | None, model_reason: str | None) -> tuple[str, str]:
        """(classification, reason suffix) of one anomaly, by the rule for its kind (docs/history.md)."""
        name = RULE_OF_KIND.get(row["kind"])
        if name is None:
            return "allowed", "; counted, not an anomaly"
        return getattr(self, name)(row, durability, model_reason)

    def _lost(self, row, durability, model_reason):
        if not pd.isna(row["t_read_ns"]):
            return self.committed_lost(row, "a consumer read it, so it was committed")
        if durability == "guaranteed":
            return "violation", f"; the model classed it guaranteed: {model_reason}" + \
                self.unpredicted(row["partition"], row["offset"])
        return "allowed", f"; at risk: {model_reason}"

    def _lost_after_read(self, row, durability, model_reason):
        return self.committed_lost(row, "committed (a consumer read it)")

    def _out_of_order(self, row, durability, model_reason):
        if pd.isna(row["idempotent"]) or not bool(row["idempotent"]):
            return "allowed", "; allowed: a producer without idempotence may retry and reorder"
        t = _int(row["t_invoke_ns"]) or _int(row["t_read_ns"]) or 0
        voided = self.model.idempotence_voided(int(row["partition"]), t, _int(row["t_complete_ns"])) \
            if not pd.isna(row["partition"]) else None
        if voided:
            return "allowed", f"; allowed: idempotence voided by {voided}"
        bumped = epoch_bump_between(self.client_voids, row.get("producer"), _int(row["t_invoke_ns"]),
                                    _int(row["t_complete_ns"]))
        if bumped:
            return "allowed", f"; allowed by Kafka's rules, idempotence voided by {bumped}"
        return "violation", "; the producer is idempotent, which forbids this"

    def _phantom(self, row, durability, model_reason):
        return "violation", "; no truncation or election creates a value nobody sent"

    def _failed_read(self, row, durability, model_reason):
        return "violation", "; a send the client reported as certainly failed reached the log"

    def _rewritten(self, row, durability, model_reason):
        if row["kind"] == "offset_mismatch" and durability == "at_risk":
            return "allowed", f"; allowed: the write at its acked offset was at risk: {model_reason}"
        t_read = _int(row["t_read_ns"])
        cause = self.model.rewrite_cause(int(row["partition"]), int(row["offset"]), t_read) \
            if not pd.isna(row["partition"]) and not pd.isna(row["offset"]) else None
        if cause:
            return "allowed", f"; explained by {cause}"
        return "violation", "; a read (committed) position was rewritten and the model predicts no unclean " \
                            "election or power loss that could" + self.unpredicted(row["partition"], row["offset"])

    def _min_isr_breach(self, row, durability, model_reason):
        return "violation", "; Kafka rejects acks=all with NOT_ENOUGH_REPLICAS while the ISR is below " \
                            "min.insync.replicas (Partition.appendRecordsToLeader)"

    def _poll_skip(self, row, durability, model_reason):
        if self.meta.consumer_mode == "assign":
            return "violation", "; assign mode: nothing may move the position past unread records"
        return "allowed", "; allowed in subscribe mode: a rebalance may commit past unread records"

    def _stall(self, row, durability, model_reason):
        s = self.stalls.get((int(row["partition"]), int(row["t_invoke_ns"])))
        note = f"; {s.unpredicted_s:.1f} s of it outside the model's predicted unavailability" if s else ""
        if self.max_stall_s is not None and s and s.seconds > self.max_stall_s:
            return "violation", note + f"; longer than --max-stall {self.max_stall_s:g} s"
        return "allowed", note + "; Kafka promises no availability bound (set --max-stall to require one)"


RULE_OF_KIND = {
    "lost": "_lost", "lost_after_read": "_lost_after_read", "duplicate": "_out_of_order",
    "nonmonotonic_send": "_out_of_order", "phantom": "_phantom", "failed_read": "_failed_read",
    "divergent": "_rewritten", "offset_mismatch": "_rewritten", "min_isr_breach": "_min_isr_breach",
    "poll_skip": "_poll_skip", "stall": "_stall",
}


def judge(instances: pd.DataFrame, meta: RunMeta, model: ModelResult, complete: Completeness | None = None,
          observed_losses: list[dict] = (), stalls: list[availability.Stall] = (),
          max_stall_s: float | None = None, client_voids: ClientVoids | None = None) -> pd.DataFrame:
    """The anomalies.parquet rows: instances plus classification, durability and reason. Lost kinds of
    partitions whose drain did not complete are dropped: their absence from the drain proves nothing."""
    complete = complete or Completeness(meta.partitions)
    out = pd.concat([instances, stall_rows(list(stalls))], ignore_index=True) if stalls else instances.copy()
    if complete.incomplete and len(out):
        dropped = out["kind"].isin(LOST_KINDS) & out["partition"].isin(list(complete.incomplete))
        out = out[~dropped.fillna(False).to_numpy(dtype=bool)].reset_index(drop=True)
    n = len(out)
    classification = np.full(n, "allowed", dtype=object)
    durability = np.full(n, None, dtype=object)
    model_reason = np.full(n, None, dtype=object)
    is_send = out["kind"].isin(SEND_KINDS).to_numpy() & out["acks"].notna().to_numpy() if n else np.zeros(0, bool)
    if is_send.any():
        cls = model.classify(out[is_send])
        durability[is_send] = cls["durability"].to_numpy()
        model_reason[is_send] = cls["reason"].to_numpy()
    j = Judge(meta, model, complete, observed_losses, stalls, max_stall_s, client_voids)
    reason = np.full(n, "", dtype=object)
    for i, row in enumerate(out.to_dict("records")):
        cls_i, why = j.rule(row, durability[i], model_reason[i])
        classification[i] = cls_i
        reason[i] = _describe(row) + why
    out["classification"] = classification
    out["durability"] = durability
    out["reason"] = reason
    return out


def anomalies_table(judged: pd.DataFrame) -> pa.Table:
    """anomalies.parquet's table. Integer columns go through pandas' nullable integers: a float dtype that reached
    here (a concat of Int64 with float64 gives Float64) would be stored as such in the pandas metadata, and readers
    would fail to cast nanosecond times back (beyond 2^53)."""
    cols = {f.name: judged[f.name] for f in ANOMALIES_SCHEMA}
    ints = {f.name: "Int32" if f.type == pa.int32() else "Int64" for f in ANOMALIES_SCHEMA
            if pa.types.is_integer(f.type)}
    frame = pd.DataFrame(cols).astype({"durability": object, "classification": object, "reason": object, **ints})
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
    anomalies = {k: int((judged["kind"] == k).sum()) for k in ANOMALY_KINDS}
    violating = judged[judged["classification"] == "violation"]
    violations = {k: int(v) for k, v in violating["kind"].value_counts().items() if v}
    lost = judged[judged["kind"] == "lost"]
    if complete.status == "incomplete":
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
