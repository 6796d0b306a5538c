"""Judge anomaly instances with the ISR model: which are violations (verdict_file writes the verdict).

The finders (Spark or the pandas reference) only say what happened; this module says whether Kafka's own rules
permitted it (docs/history.md, "Judgement"):
- a record a consumer read was committed: losing it (lost after read, or a read acked write missing from the
  drain) or replacing it (divergent) takes an unclean election or a power loss the model predicts;
- an unread acked write may be lost only where the model classes it at risk;
- a phantom or a read of a definitely failed send is never explained by a truncation;
- duplicates and reordering break an idempotent producer's promise unless an unclean election or power loss
  voided it; an acks=all ack while the ISR was certainly below min.insync.replicas breaks Kafka's promise;
- a stall is reported, and a violation only beyond the user's --max-stall.
Lost kinds in partitions whose final drain did not complete are not counted, and such a run gets no verdict (unless
a violation proven without the drain, DRAIN_INDEPENDENT, makes it invalid).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from kafka_chaos.base.arrays import filled
from kafka_chaos.checkers import availability, excuses, instances
from kafka_chaos.checkers.client import ClientVoids, epoch_bumps_between
from kafka_chaos.checkers.completeness import Completeness
from kafka_chaos.checkers.judge.claims import claim_columns, no_claims, window_claims
from kafka_chaos.checkers.judge.earlier_sends import truncated_earlier_sends
from kafka_chaos.checkers.judge.markers import abort_marker_claims, commit_marker_claims, marker_reasons
from kafka_chaos.checkers.model import ModelResult
from kafka_chaos.history.kinds import KINDS
from kafka_chaos.history.meta import RunMeta

LOST_KINDS = ("lost", "lost_after_read")
# Violations proven without the final drain (from the samples): a run holding one is invalid even where the drain is
# incomplete. A stuck last stable offset is judged from lso.parquet, and is what leaves a read_committed drain
# incomplete (workloads/drain.py), so it must not turn the run it proves wrong into "no verdict". A replica
# divergence is read from the replicas' own files (replicas.parquet), whatever the drain saw.
DRAIN_INDEPENDENT = ("lso_stuck", "replica_divergence")
RISK_WINDOW = "_risk_window"     # a judged frame's column while the rules run: the model's Window that classed a send
SEND_KINDS = ("lost", "duplicate", "offset_mismatch", "nonmonotonic_send", "failed_read", "recovered",
              "min_isr_breach")


def _txt(col: pd.Series) -> pd.Series:
    """A column as the text an f-string gives each value of its records ("None" where missing), as object
    strings. Integers through Arrow's cast (in C), anything else by str() of each distinct value: a Python step
    per row took 3.9 s of a 1M-row judge."""
    if pd.api.types.is_integer_dtype(col.dtype):
        text = pa.array(col, from_pandas=True).cast(pa.string()).fill_null("None")
        return pd.Series(text.to_numpy(zero_copy_only=False), index=col.index, dtype=object)
    codes, uniques = pd.factorize(col.astype(object), use_na_sentinel=True)
    texts = np.array([str(u) for u in uniques] + ["None"], dtype=object)     # code -1 (missing) is the last
    return pd.Series(texts[codes], index=col.index, dtype=object)


def _fmt(col: pd.Series) -> pd.Series:
    """Integers as digits, "?" where missing."""
    return _txt(col.astype("Int64")).where(col.notna(), "?")


def _describe(rows: pd.DataFrame) -> pd.Series:
    """What each instance is, in words (all rows of one kind)."""
    kind = rows["kind"].iloc[0] if len(rows) else None
    if kind == "lost":
        read = pd.Series(", read by a live consumer,", index=rows.index).where(rows["t_read_ns"].notna(), "")
        return "acked at offset " + _fmt(rows["offset"]) + " with acks=" + _txt(rows["acks"]) + read + \
            " absent from the completed final drain of partition " + _fmt(rows["partition"])
    if kind == "lost_after_read":
        return "read by a live consumer at offset " + _fmt(rows["offset"]) + ", absent from the completed final " \
            "drain of partition " + _fmt(rows["partition"])
    if kind == "duplicate":
        return "read at " + _txt(rows["multiplicity"]) + " positions"
    if kind == "divergent":
        return _txt(rows["multiplicity"]) + " different values read at this offset"
    if kind == "offset_mismatch":
        return "acked at offset " + _fmt(rows["offset"]) + ", read only elsewhere"
    if kind == "poll_skip":
        return "consumer " + _txt(rows["consumer"]) + " jumped from offset " + _txt(rows["from_offset"]) + \
            " to " + _txt(rows["offset"]) + " over offsets others read"
    if kind == "stall":
        s = (rows["t_complete_ns"].astype("Int64") - rows["t_invoke_ns"].astype("Int64")).astype(object)
        return pd.Series([f"no write acknowledged for {x / 1e9:.1f} s while writes were pending" for x in s],
                         index=rows.index, dtype=object)
    return pd.Series(KINDS[kind].describe if kind in KINDS else None, index=rows.index, dtype=object)


def stall_rows(found: list[availability.Stall]) -> pd.DataFrame:
    """Instance rows of kind `stall`: t_invoke_ns..t_complete_ns is the stall."""
    return instances.typed(pd.DataFrame({"kind": "stall", "partition": [s.partition for s in found],
                                         "t_invoke_ns": [s.start_ns for s in found],
                                         "t_complete_ns": [s.end_ns for s in found]}))


_AS_TEXT = np.frompyfunc(str, 1, 1)


def _str(values: np.ndarray) -> np.ndarray:
    """Each value as an f-string shows it ("None" for None), as an object array that + joins elementwise. str()
    per element: a string stays the same object, where astype(str) built a fixed-width unicode copy of the column
    first (4 bytes per character of its longest reason, per row)."""
    return _AS_TEXT(np.asarray(values, dtype=object))       # an object array already: no copy


def _pick(cond, yes, no) -> np.ndarray:
    """Elementwise yes where cond, else no (each a scalar, an array or a Series aligned with cond)."""
    return np.where(np.asarray(cond, dtype=bool), np.asarray(yes, dtype=object), np.asarray(no, dtype=object))


class Judge:
    """Classifies the instances of one run, all of a kind at once; holds what every rule needs. Each rule takes the
    rows of its kinds (a frame), their durability and the model's reason, and returns (classification, reason
    suffix) arrays."""

    def __init__(self, meta: RunMeta, model: ModelResult, complete: Completeness,
                 observed_losses: list[dict] = (), stalls: list[availability.Stall] = (),
                 max_stall_s: float | None = None, client_voids: ClientVoids | None = None):
        self.meta, self.model, self.complete = meta, model, complete
        self.client_voids = client_voids or ClientVoids()
        self.observed_losses = list(observed_losses)
        self.stalls = {(s.partition, s.start_ns): s for s in stalls}
        self.max_stall_s = max_stall_s

    def unpredicted(self, rows: pd.DataFrame) -> np.ndarray:
        """Name the observed event (a high-watermark drop or an unclean election the model did not predict)
        that alone explains a lost committed record, if there is one ("" where none)."""
        out = filled(len(rows), "")
        part, off = rows["partition"].astype("Int64"), rows["offset"].astype("Int64")
        for e in reversed(self.observed_losses):      # the first event that explains it names it
            lo, hi = e.get("hw_after"), e.get("hw_before")
            inside = off.isna() | (lo is None) | (hi is None) | ((off >= (lo or 0)) & (off < (hi or 0))).fillna(False)
            hit = (part == int(e["partition"])).fillna(False) & inside
            out[hit.to_numpy(dtype=bool)] = f"; only an event the model did not predict explains it: {e['detail']}"
        return out

    def committed_lost(self, rows: pd.DataFrame, why: str):
        t_read, t_ack = rows["t_read_ns"], rows["t_complete_ns"]
        windows = self.model.committed_loss_windows(rows["partition"], t_read.fillna(t_ack), t_ack,
                                                    rows["t_invoke_ns"])
        claims = window_claims(excuses.LOSS_EVENT, windows, rows["t_invoke_ns"])
        has = claims != None    # noqa: E711 (elementwise)
        cause = np.full(len(rows), None, dtype=object)
        cause[has] = [f"{w.reason} (cause {c.cause.id})" for w, c in zip(windows[has], claims[has])]
        return _pick(has, "allowed", "violation"), _pick(
            has, "; allowed: " + _str(cause), f"; {why}: only an unclean election or a power loss may remove "
            "a committed record, and the model predicts none that could" + self.unpredicted(rows)), claims

    def rule(self, rows: pd.DataFrame, durability: np.ndarray, model_reason: np.ndarray):
        """(classification, reason suffix) of the anomalies of one kind, by the rule for it (docs/history.md)."""
        name = RULE_OF_KIND.get(rows["kind"].iloc[0])
        if name is None:
            return filled(len(rows), "allowed"), filled(len(rows), "; counted, not an anomaly"), no_claims(rows)
        out = getattr(self, name)(rows, durability, model_reason)
        return out if len(out) == 3 else (*out, no_claims(rows))

    def _lost(self, rows, durability, model_reason):
        read = rows["t_read_ns"].notna().to_numpy()
        committed = self._committed_where(rows, read, "a consumer read it, so it was committed")
        reason = _str(model_reason)
        markers = commit_marker_claims(self.model, self.meta, rows)
        marker = marker_reasons(markers)
        guaranteed = (durability == "guaranteed") & (marker == None)    # noqa: E711 (elementwise)
        windows = rows[RISK_WINDOW].to_numpy(dtype=object) if RISK_WINDOW in rows else no_claims(rows)
        at_risk = window_claims(excuses.MODEL_RISK, windows, rows["t_invoke_ns"])
        return _pick(read, committed[0], _pick(guaranteed, "violation", "allowed")), _pick(
            read, committed[1], _pick(guaranteed, "; the model classed it guaranteed: " + reason +
                                      self.unpredicted(rows), _pick(marker == None, "; at risk: " + reason,  # noqa
                                                                    "; allowed: " + _str(marker)))), \
            _pick(read, committed[2], _pick(marker == None, at_risk, markers))    # noqa: E711 (elementwise)

    def _committed_where(self, rows, read: np.ndarray, why: str):
        """committed_lost of the `read` rows only (the others' entries are None): an unread lost write is judged by
        its durability, so its loss windows need not be looked up."""
        out = [np.full(len(rows), None, dtype=object) for _ in range(3)]
        if read.any():
            for o, part in zip(out, self.committed_lost(rows[read], why)):
                o[read] = part
        return out

    def marker_lost(self, rows) -> np.ndarray:
        """For a transactional producer's committed record: why its COMMIT marker may be gone (commit_marker_claims:
        a loss window that holds the marker's append), as a reason; None elsewhere. A transactional record is
        visible only with its marker (KIP-98); without it the partition's next marker from the same producer ends
        the transaction (an ABORT: read as aborted) or nothing does (lso_stuck)."""
        return marker_reasons(commit_marker_claims(self.model, self.meta, rows))

    def _lost_after_read(self, rows, durability, model_reason):
        return self.committed_lost(rows, "committed (a consumer read it)")

    def _out_of_order(self, rows, durability, model_reason):
        """A duplicate is void where a loss window holds its first copy; a nonmonotonic send where one held the
        producer's earlier send it was acked below (truncated_earlier_claims); either where the client bumped its
        epoch while the write was pending. (classification, reason, Claim|None per row)."""
        idempotent = rows["idempotent"].fillna(False).astype(bool).to_numpy()
        inv, read = rows["t_invoke_ns"].astype("Int64"), rows["t_read_ns"].astype("Int64")
        claims, voided_by = np.full(len(rows), None, dtype=object), "; allowed: idempotence voided by "
        if rows["kind"].iloc[0] == "nonmonotonic_send":
            claims, voided = truncated_earlier_sends(self.model, self.client_voids.sends_file, rows, idempotent)
            voided_by = "; "
        else:
            t = inv.where(inv.notna() & (inv != 0), read.where(read.notna() & (read != 0), 0))
            windows = self.model.idempotence_voided_many(rows["partition"], t, rows["t_complete_ns"], windows=True)
            claims = window_claims(excuses.LOSS_EVENT, windows, t)
            voided = np.array([None if c is None else f"the predicted {w.reason}" for c, w in zip(claims, windows)],
                              dtype=object)
        done = rows["t_complete_ns"].astype("Int64")
        bumps = np.full(len(rows), None, dtype=object)
        bumped = epoch_bumps_between(self.client_voids, rows["producer"].astype(object).to_numpy(),
                                     inv.fillna(0).to_numpy(dtype=np.int64), done.fillna(0).to_numpy(dtype=np.int64),
                                     (inv.notna() & done.notna()).to_numpy(dtype=bool), bumps)
        is_voided, is_bumped = voided != None, bumped != None    # noqa: E711 (elementwise)
        cls = _pick(~idempotent | is_voided | is_bumped, "allowed", "violation")
        why = _pick(~idempotent, "; allowed: a producer without idempotence may retry and reorder",
                    _pick(is_voided, voided_by + _str(voided),
                          _pick(is_bumped, "; allowed by Kafka's rules, idempotence voided by " + _str(bumped),
                                "; the producer is idempotent, which forbids this")))
        bump_claims = np.array([None if c is None else excuses.Claim(excuses.CLIENT_EPOCH_BUMP, c) for c in bumps],
                               dtype=object)
        return cls, why, _pick(~idempotent, self.setting_claim("no idempotence"),
                               _pick(is_voided, claims, np.where(is_bumped, bump_claims, None)))

    def setting_claim(self, what: str) -> excuses.Claim:
        """The SETTING excuse, its cause the run's settings (meta.json) at the run's start."""
        return excuses.Claim(excuses.SETTING, excuses.Cause(f"meta.json: {what}", int(self.meta.start_ns or 0),
                                                            f"the run's setting: {what}"))

    def _always(self, rows, durability, model_reason):
        """A violation, whatever the model predicts; except a transactional producer's aborted write read where its
        ABORT marker was lost (abort_marker_claims), the mirror of a lost COMMIT marker (marker_lost)."""
        cls, why = _constant(rows, "violation", "; " + KINDS[rows["kind"].iloc[0]].because)
        claims = abort_marker_claims(self.model, self.meta, rows) if rows["kind"].iloc[0] == "failed_read" else \
            np.full(len(rows), None, dtype=object)
        for i in np.flatnonzero(claims != None):    # noqa: E711 (elementwise)
            cls[i], why[i] = "allowed", "; its transaction's ABORT marker may be missing on the elected replica, " \
                "which then holds the aborted record in an open transaction: " + claims[i].reason()
        return cls, why, claims

    def _rewritten(self, rows, durability, model_reason):
        at_risk = (rows["kind"].to_numpy() == "offset_mismatch") & (durability == "at_risk")
        placed = rows["partition"].notna() & rows["offset"].notna()
        windows = self.model.rewrite_windows(rows["partition"], rows["offset"], rows["t_read_ns"])
        windows[~placed.to_numpy(dtype=bool)] = None
        # the window's own timing (it began before the read, above the HW floor): a zombie's record read after the
        # election is truncated only when the zombie follows, a time the model does not place
        loss = window_claims(excuses.LOSS_EVENT, windows, np.full(len(rows), None, dtype=object))
        explained = loss != None    # noqa: E711 (elementwise)
        cause = np.full(len(rows), None, dtype=object)
        cause[explained] = [f"the predicted {w.reason} (cause {c.cause.id})" for w, c in
                            zip(windows[explained], loss[explained])]
        risky = window_claims(excuses.MODEL_RISK, rows[RISK_WINDOW].to_numpy(dtype=object) if RISK_WINDOW in rows
                              else no_claims(rows), rows["t_invoke_ns"])
        cls = _pick(at_risk | explained, "allowed", "violation")
        why = _pick(at_risk, "; allowed: the write at its acked offset was at risk: " + _str(model_reason),
                    _pick(explained, "; explained by " + _str(cause),
                          "; a read (committed) position was rewritten and the model predicts no unclean election or "
                          "power loss that could" + self.unpredicted(rows)))
        return cls, why, _pick(at_risk, risky, loss)

    def _poll_skip(self, rows, durability, model_reason):
        if self.meta.consumer_mode == "assign":
            return _constant(rows, "violation", "; assign mode: nothing may move the position past unread records")
        return _constant(rows, "allowed", "; allowed in subscribe mode: a rebalance may commit past unread records "
                         "(judged by its assignment where the run has history/group.parquet: judge/poll_skips.py)")

    def _stall(self, rows, durability, model_reason):
        cls, why = [], []
        for p, t in zip(rows["partition"], rows["t_invoke_ns"]):      # one row per stall: a handful
            s = self.stalls.get((int(p), int(t)))
            note = f"; {s.unpredicted_s:.1f} s of it outside the model's predicted unavailability" if s else ""
            if self.max_stall_s is not None and s and s.seconds > self.max_stall_s:
                cls.append("violation")
                why.append(note + f"; longer than --max-stall {self.max_stall_s:g} s")
            else:
                cls.append("allowed")
                why.append(note + "; Kafka promises no availability bound (set --max-stall to require one)")
        bound = "--max-stall unset" if self.max_stall_s is None else f"--max-stall {self.max_stall_s:g} s"
        return np.array(cls, dtype=object), np.array(why, dtype=object), filled(len(cls), self.setting_claim(bound))


def _constant(rows: pd.DataFrame, classification: str, why: str):
    return filled(len(rows), classification), filled(len(rows), why)


RULE_OF_KIND = {k: f"_{v.rule}" for k, v in KINDS.items() if v.rule}     # each kind's rule, declared with it


def judge(instances: pd.DataFrame, meta: RunMeta, model: ModelResult, complete: Completeness | None = None,
          observed_losses: list[dict] = (), stalls: list[availability.Stall] = (),
          max_stall_s: float | None = None, client_voids: ClientVoids | None = None) -> pd.DataFrame:
    """The anomalies.parquet rows: instances plus classification, durability and reason. Lost kinds of
    partitions whose drain did not complete are dropped: their absence from the drain proves nothing. Judged a
    kind at a time, each rule over all its rows at once (no Python step per instance)."""
    complete = complete or Completeness(meta.partitions)
    out = pd.concat([instances, stall_rows(list(stalls))], ignore_index=True) if stalls else \
        instances.copy(deep=False)      # only columns are added to it: the instances' own stay shared
    if complete.incomplete and len(out):
        dropped = out["kind"].isin(LOST_KINDS) & out["partition"].isin(list(complete.incomplete))
        out = out[~dropped.fillna(False).to_numpy(dtype=bool)].reset_index(drop=True)
    n = len(out)
    classification = filled(n, "allowed")
    durability = np.full(n, None, dtype=object)
    model_reason = np.full(n, None, dtype=object)
    risk_window = np.full(n, None, dtype=object)
    is_send = out["kind"].isin(SEND_KINDS).to_numpy() & out["acks"].notna().to_numpy() if n else np.zeros(0, bool)
    if is_send.any():
        cls = model.classify(out.loc[is_send, ["partition", "acks", "t_invoke_ns", "t_complete_ns"]])
        durability[is_send] = cls["durability"].to_numpy()
        model_reason[is_send] = cls["reason"].to_numpy()
        risk_window[is_send] = cls["risk_window"].to_numpy()
    out[RISK_WINDOW] = risk_window      # for the rules (the window's cause is the excuse's); not written
    j = Judge(meta, model, complete, observed_losses, stalls, max_stall_s, client_voids)
    reason = filled(n, "")
    claimed = np.full(n, None, dtype=object)
    kinds = out["kind"].astype(object).to_numpy()
    for kind in pd.unique(kinds):
        at = np.nonzero(kinds == kind)[0]
        rows = out.iloc[at]
        cls_k, why, claims = j.rule(rows, durability[at], model_reason[at])
        classification[at] = cls_k
        reason[at] = _joined(_describe(rows).to_numpy(dtype=object), np.asarray(why, dtype=object))
        claimed[at] = np.where(np.asarray(cls_k, dtype=object) == "allowed", np.asarray(claims, dtype=object), None)
    out["classification"] = classification
    out["durability"] = durability
    out["reason"] = reason
    out["excuse"], out["cause_id"], out["cause_t_ns"] = claim_columns(claimed)
    return out.drop(columns=[RISK_WINDOW])


def _joined(words: np.ndarray, why: np.ndarray) -> np.ndarray:
    """words + why elementwise; one shared string where both are the same on every row (a kind with fixed words
    and one reason, such as recovered: 5M rows at 100M anomaly-dense sends, each given a new ~150-character
    string before)."""
    if len(words) and (words == words[0]).all() and (why == why[0]).all():
        return filled(len(words), words[0] + why[0])
    return words + why


