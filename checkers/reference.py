"""The anomaly definitions implemented once more, vectorised in one process (pandas + numpy).

Why a second implementation: the tests cross-check the Spark queries against it, and the benchmark compares
Spark's wall time against it. Values are factorised to dense integer codes first, so every per-value question
("is it read?", "how many positions?") is an array lookup instead of a string join.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kafka_chaos.checkers import instances
from kafka_chaos.history.schema import ACKED


@dataclass(frozen=True)
class Counts:
    sends: int
    ok: int
    fail: int
    info: int
    reads: int
    final_reads: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def count(sends: pd.DataFrame, reads: pd.DataFrame) -> Counts:
    outcomes = sends["outcome"].value_counts()
    return Counts(sends=len(sends), ok=int(outcomes.get("ok", 0)), fail=int(outcomes.get("fail", 0)),
                  info=int(outcomes.get("info", 0)), reads=len(reads),
                  final_reads=int((reads["phase"] == "final").sum()))


def _int(series: pd.Series, fill: int = -1) -> np.ndarray:
    return series.fillna(fill).to_numpy(dtype=np.int64)


def find_anomalies(sends: pd.DataFrame, reads: pd.DataFrame,
                   breach_windows: list[tuple[int, int, int]] = ()) -> pd.DataFrame:
    """Every anomaly instance of the history (the instance table of checkers.instances).

    breach_windows: (partition, start_ns, end_ns) in which the ISR model is certain the ISR was below
    min.insync.replicas; acks=all writes acked wholly inside one are `min_isr_breach` instances."""
    sends = sends.drop_duplicates("value", keep="first").reset_index(drop=True)
    codes, uniques = pd.factorize(pd.concat([sends["value"], reads["value"]], ignore_index=True), sort=False)
    n_values = len(uniques)
    s_code, r_code = codes[:len(sends)], codes[len(sends):]

    s_part, s_off = _int(sends["partition"]), _int(sends["offset"])
    r_part, r_off = reads["partition"].to_numpy(dtype=np.int64), reads["offset"].to_numpy(dtype=np.int64)
    outcome = sends["outcome"].to_numpy(dtype=object)
    is_ok, is_fail, is_info = outcome == "ok", outcome == "fail", outcome == "info"

    is_read = np.zeros(n_values, dtype=bool)
    is_read[r_code] = True
    is_sent = np.zeros(n_values, dtype=bool)
    is_sent[s_code] = True
    s_read = is_read[s_code]

    # Distinct (partition, offset, value) positions, and distinct (partition, offset) per value / values per offset.
    pos = pd.DataFrame({"partition": r_part, "offset": r_off, "code": r_code}).drop_duplicates()
    p_part, p_off, p_code = (pos[c].to_numpy() for c in ("partition", "offset", "code"))
    positions_per_value = np.bincount(p_code, minlength=n_values)

    found = []

    # lost: acked, absent from the final drain of its partition (read live or not); lost_after_read: read live in
    # a partition whose final drain lacks it. Completeness of the drain is judged later, per partition.
    phase = reads["phase"].to_numpy(dtype=object)
    width = int(max(s_part.max(initial=0), r_part.max(initial=0))) + 2
    fin_keys = np.unique(r_code[phase == "final"].astype(np.int64) * width + r_part[phase == "final"])
    s_fin = np.isin(s_code.astype(np.int64) * width + s_part, fin_keys)
    lost = is_ok & sends["acks"].isin(ACKED).to_numpy() & (s_part >= 0) & ~s_fin
    found.append(_send_rows(sends, lost, "lost"))
    live = phase == "live"
    lr = pd.DataFrame({"code": r_code[live], "partition": r_part[live], "offset": r_off[live]})
    lr = lr[~np.isin(lr["code"].to_numpy(dtype=np.int64) * width + lr["partition"].to_numpy(), fin_keys)]
    lr = lr.sort_values(["code", "partition", "offset"]).drop_duplicates("code")
    lar = pd.DataFrame({"kind": "lost_after_read", "partition": lr["partition"].to_numpy(),
                        "offset": lr["offset"].to_numpy(), "value": uniques[lr["code"].to_numpy()]})
    found.append(lar.merge(_send_columns(sends).drop(columns=["partition", "offset"]), on="value", how="left"))

    # min_isr_breach: acks=all writes acked while the model is certain the ISR was below min.insync.replicas
    if len(breach_windows):
        t_inv = sends["t_invoke_ns"].to_numpy(dtype=np.int64)
        t_done = _int(sends["t_complete_ns"], np.iinfo(np.int64).max)
        all_ok = is_ok & (sends["acks"].to_numpy(dtype=object) == "all")
        breach = np.zeros(len(sends), dtype=bool)
        for p, a, b in breach_windows:
            breach |= all_ok & (s_part == p) & (t_inv >= a) & (t_done <= b)
        found.append(_send_rows(sends, breach, "min_isr_breach"))

    # duplicate (per value read at >= 2 positions) and phantom (per read value that no send carries)
    first_pos = pos.sort_values(["code", "partition", "offset"]).drop_duplicates("code").set_index("code")
    dup_codes = np.nonzero(positions_per_value >= 2)[0]
    phantom_codes = np.nonzero(is_read & ~is_sent)[0]
    for kind, wanted in (("duplicate", dup_codes), ("phantom", phantom_codes)):
        rows = first_pos.loc[wanted].reset_index()
        rows["value"] = uniques[rows["code"].to_numpy()]
        rows["multiplicity"] = positions_per_value[rows["code"].to_numpy()]
        rows["kind"] = kind
        rows = rows.drop(columns="code").merge(_send_columns(sends), on="value", how="left",
                                               suffixes=("", "_send"))
        found.append(rows.drop(columns=[c for c in rows.columns if c.endswith("_send")]))

    # divergent: one position, several values
    sizes = pos.groupby(["partition", "offset"])["code"].transform("size").to_numpy()
    shared = pos[sizes >= 2].assign(value=lambda d: uniques[d["code"].to_numpy()])
    div = shared.groupby(["partition", "offset"])["value"].agg(["min", "size"]).reset_index()
    found.append(pd.DataFrame({"kind": "divergent", "partition": div["partition"], "offset": div["offset"],
                               "value": div["min"], "multiplicity": div["size"]}))

    # failed_read and recovered: definite failures and indeterminate sends whose value was read
    found.append(_send_rows(sends, is_fail & s_read, "failed_read"))
    found.append(_send_rows(sends, is_info & s_read, "recovered"))

    # offset_mismatch: acked at (p, o), read, but never at (p, o)
    acked_part = np.full(n_values, -2, dtype=np.int64)
    acked_off = np.full(n_values, -2, dtype=np.int64)
    with_offset = is_ok & (s_off >= 0)
    acked_part[s_code[with_offset]] = s_part[with_offset]
    acked_off[s_code[with_offset]] = s_off[with_offset]
    at_acked = np.zeros(n_values, dtype=bool)
    at_acked[p_code[(acked_part[p_code] == p_part) & (acked_off[p_code] == p_off)]] = True
    found.append(_send_rows(sends, with_offset & s_read & ~at_acked[s_code], "offset_mismatch"))

    # nonmonotonic_send: per producer session and partition, ok sends in invoke order
    idx = np.nonzero(with_offset)[0]
    order = idx[np.lexsort((sends["op_id"].to_numpy()[idx], sends["t_invoke_ns"].to_numpy()[idx], s_part[idx],
                            pd.factorize(sends["producer"])[0][idx], sends["process"].to_numpy()[idx]))]
    key = (sends["process"].to_numpy()[order], sends["producer"].to_numpy()[order], s_part[order])
    same_series = (key[0][1:] == key[0][:-1]) & (key[1][1:] == key[1][:-1]) & (key[2][1:] == key[2][:-1])
    drops = np.zeros(len(sends), dtype=bool)
    drops[order[1:][same_series & (s_off[order][1:] < s_off[order][:-1])]] = True
    found.append(_send_rows(sends, drops, "nonmonotonic_send"))

    found.append(_poll_skips(reads, r_part, r_off))
    found = [instances.normalise(f) for f in found if len(f)]
    out = pd.concat(found, ignore_index=True) if found else instances.empty()
    return _add_first_reads(out, reads)


def _send_columns(sends: pd.DataFrame) -> pd.DataFrame:
    return sends[["value", "partition", "offset", "producer", "process", "op_id", "acks", "idempotent",
                  "t_invoke_ns", "t_complete_ns"]]


def _send_rows(sends: pd.DataFrame, mask: np.ndarray, kind: str) -> pd.DataFrame:
    rows = _send_columns(sends)[mask].copy()
    rows.insert(0, "kind", kind)
    return rows


def _poll_skips(reads: pd.DataFrame, r_part: np.ndarray, r_off: np.ndarray) -> pd.DataFrame:
    """Steps a -> b > a + 1 in a live consumer's reads of a partition, with some read strictly between."""
    live = np.nonzero(reads["phase"].to_numpy(dtype=object) == "live")[0]
    consumer = pd.factorize(reads["consumer"].to_numpy(dtype=object))[0]
    order = live[np.lexsort((reads["seq"].to_numpy()[live], r_part[live], consumer[live]))]
    c_ord = consumer[order]
    same = (c_ord[1:] == c_ord[:-1]) & (r_part[order][1:] == r_part[order][:-1])
    a, b = r_off[order][:-1], r_off[order][1:]
    step = np.nonzero(same & (b > a + 1))[0]
    rows = []
    if len(step):
        read_offsets = pd.DataFrame({"partition": r_part, "offset": r_off}).drop_duplicates()
        by_partition = {p: np.sort(g["offset"].to_numpy()) for p, g in read_offsets.groupby("partition")}
        part = r_part[order][1:][step]
        for p in np.unique(part):
            sel = step[part == p]
            u = by_partition[p]
            between = np.searchsorted(u, b[sel], "left") - np.searchsorted(u, a[sel], "right")
            hit = sel[between > 0]
            target = order[1:][hit]
            rows.append(pd.DataFrame({
                "kind": "poll_skip", "partition": r_part[target], "offset": b[hit], "from_offset": a[hit],
                "value": reads["value"].to_numpy(dtype=object)[target],
                "consumer": reads["consumer"].to_numpy(dtype=object)[target],
                "t_read_ns": reads["t_ns"].to_numpy()[target]}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


def _add_first_reads(found: pd.DataFrame, reads: pd.DataFrame) -> pd.DataFrame:
    """t_read_ns: the value's first read (divergent: the position's first read), unless already set."""
    if not len(found):
        return instances.normalise(found)
    if "t_read_ns" not in found.columns:
        found["t_read_ns"] = pd.NA
    wanted = set(found["value"].dropna())
    by_value = reads[reads["value"].isin(wanted)].groupby("value")["t_ns"].min()
    div = found["kind"] == "divergent"
    by_position = pd.Series(dtype="Int64")
    if div.any():
        keys = found.loc[div, ["partition", "offset"]].astype("int64")
        hit = reads.merge(keys, on=["partition", "offset"])
        by_position = hit.groupby(["partition", "offset"])["t_ns"].min()
    t = found["t_read_ns"].astype("Int64")
    from_value = found["value"].map(by_value).astype("Int64")
    t = t.fillna(from_value.where(~div))
    if div.any():
        pos_t = [by_position.get((int(p), int(o))) for p, o in zip(found.loc[div, "partition"],
                                                                       found.loc[div, "offset"])]
        t.loc[div] = pd.array(pos_t, dtype="Int64")
    found["t_read_ns"] = t
    return instances.normalise(found)
