"""What the cluster visibly did, from cluster.parquet, set against what the ISR model predicted.

The sampler asks whichever broker answers for each partition's leader, ISR, ELR and high watermark every 500 ms.
From those samples come the observed events: elections (and whether the new leader came from the previous ISR,
or ELR, i.e. clean, or not, i.e. unclean) and high-watermark drops. The high watermark only moves back when
committed records are cut off a log, which Kafka allows only after an unclean election or a power loss, so a drop
is a truncation of committed data.

A broker with stale metadata can answer one sample with an older leader or high watermark. So an observed event
counts only when it persists: a new leader for at least two consecutive samples, a high watermark below its
earlier maximum for at least two consecutive samples (or until the last sample).

A disagreement is an observed event the model did not predict within TOLERANCE_NS (the model's timing is
approximate: detection times, sampling), a predicted unclean election the cluster never showed, or an election of a
broker no replay of the model elected (`leader_mismatch`, see elections.py). An election
that waited for a restarted broker to start up is predicted over a span (`since_ns` to `until_ns`, see _span) when the
run's logs do not give the controller's real unfence time.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

TOLERANCE_NS = 10_000_000_000
PERSIST = 2
# A sample followed by none for this long (no broker answered: every one was down) persists by itself: nothing
# contradicts it, and dropping it as a stale answer lost the ISR a cascade-kill's last leader had (a real run on
# 3.9.2: one sample of chaos/1 led by broker 1 with ISR [1, 3], then 31.6 s without any, then broker 2 alone; the
# unclean election was not seen, and the model's prediction of it was called a disagreement).
GAP_PERSISTS_NS = 5_000_000_000
HW_DROP_NEAR_NS = 2_000_000_000     # a high-watermark drop this close to an election came with it


def _partitions(samples: pd.DataFrame):
    """(partition, its samples in time order) for each partition, ties kept in file order."""
    ordered = samples.sort_values(["partition", "t_ns"], kind="stable")
    return [(int(p), g) for p, g in ordered.groupby("partition", sort=True)]


def _rows(g: pd.DataFrame) -> list[dict]:
    """The samples of one partition where its leader, ISR or ELR differ from the sample before or after.

    Between two such rows the samples repeat them, and the election and ISR scans do nothing on a repeat: the
    leader it shows already persisted, so nothing is elected, and the ISR and ELR it records are the ones already
    recorded. A 10M-send synthetic run's 240,012 samples thus turn into a few hundred dicts, not 240,012 (0.4 s
    each time). The high watermark moves on nearly every sample, so `_hw_drops` reads every sample, as arrays."""
    n = len(g)
    keep = np.ones(n, dtype=bool)
    if n > 2:
        same = g["leader"].to_numpy(dtype="int64", na_value=_NO_LEADER)
        same = same[1:] == same[:-1]
        for col in ("isr", "elr"):
            keys = np.array([members_key(x) for x in g[col]] if col in g.columns else [None] * n, dtype=object)
            same &= keys[1:] == keys[:-1]
        keep[1:-1] = ~(same[:-1] & same[1:])
    cols = list(g.columns)
    return [dict(zip(cols, r)) for r in g[keep].itertuples(index=False, name=None)]


_NO_LEADER = -(1 << 62)


def members_key(x):
    """A cheap hashable key, equal for equal lists of broker ids as cluster.parquet holds them (arrays, or lists in
    hand-built samples); the same members in another order make another key."""
    return x.tobytes() if isinstance(x, np.ndarray) else repr(x)


def _leader(x):
    return None if x is None or pd.isna(x) else int(x)


def _members(x) -> set[int]:
    if x is None or (not hasattr(x, "__len__") and pd.isna(x)):
        return set()
    if getattr(x, "dtype", None) is not None and x.dtype.kind in "iu":
        return set(x.tolist())           # Python ints, without a call per element (a sample's ISR is an array)
    return {int(v) for v in x}


def observed_events(samples: pd.DataFrame) -> list[dict]:
    """Elections and high-watermark drops per partition, each persisting for PERSIST samples."""
    out: list[dict] = []
    if samples is None or not len(samples):
        return out
    for p, g in _partitions(samples):
        drops = _hw_drops(p, g)
        out += _truncating(_elections(p, _rows(g)), drops) + drops
    return sorted(out, key=lambda e: (e["t_ns"], e["partition"]))


def _truncating(elections: list[dict], drops: list[dict]) -> list[dict]:
    """An election of a replica from outside the previous ISR that the samples show beside other ISR members looks
    clean (a preferred election after it rejoined), unless the high watermark fell with it: the unclean leader's
    ISR refilled before the next sample. A clean election never lowers the high watermark clients see (a new
    leader answers ListOffsets only once its high watermark has caught up, KIP-207)."""
    for e in elections:
        if e["how"] == "from the ISR" and e["leader"] not in e["previous_isr"] and any(
                abs(d["t_ns"] - e["t_ns"]) <= HW_DROP_NEAR_NS for d in drops):
            e["how"] = "uncleanly"
            e["note"] = "the ISR refilled before the next sample; the high watermark fell with the election"
    return elections


def _how_elected(lead: int, row: dict, last_isr: set, last_elr: set) -> str:
    now_isr = _members(row["isr"])
    if lead in last_isr or (lead in now_isr and now_isr - {lead}):
        # in the ISR before, or back in it beside others: an unclean election leaves the leader alone in the ISR
        # (PartitionChangeBuilder), so this is a clean (e.g. preferred) election
        return "from the ISR"
    if lead in last_elr:
        return "from the ELR"
    if row.get("elr") is None:
        return "outside the visible ISR"      # the client shows no ELR: clean or not is unknown here
    return "uncleanly"


def _elections(p: int, rows: list[dict]) -> list[dict]:
    out = []
    leaders = [_leader(r["leader"]) for r in rows]
    last_leader, last_isr, last_elr = None, set(), set()
    for i, r in enumerate(rows):
        lead = leaders[i]
        persists = all(x == lead for x in leaders[i:i + PERSIST]) and len(leaders[i:i + PERSIST]) == PERSIST or (
            i + 1 < len(rows) and int(rows[i + 1]["t_ns"]) - int(r["t_ns"]) > GAP_PERSISTS_NS)
        if lead is not None and lead != last_leader and persists and (last_leader is not None or last_isr):
            out.append({"event": "election", "partition": p, "t_ns": int(r["t_ns"]), "leader": lead,
                        "previous": last_leader, "previous_isr": sorted(last_isr), "isr": sorted(_members(r["isr"])),
                        "how": _how_elected(lead, r, last_isr, last_elr)})
        if lead is not None and persists:
            last_leader = lead
        if persists and (lead is not None or _members(r["isr"])):
            last_isr = _members(r["isr"]) or last_isr
            last_elr = _members(r.get("elr"))
    return out


def _hw_drops(p: int, g: pd.DataFrame) -> list[dict]:
    """The high watermark below its earlier maximum for PERSIST samples (or at the last sample)."""
    out = []
    # negative: a sentinel (librdkafka's OFFSET_INVALID, -1001) older samplers wrote for "could not read it"
    hw = g["high_watermark"].to_numpy(dtype="float64", na_value=np.nan)
    hw[hw < 0] = np.nan
    seen = np.fmax.accumulate(hw)
    if not (hw[1:] < seen[:-1]).any():
        return out                  # never below an earlier maximum: the usual case, decided without a loop
    hws = [None if np.isnan(h) else int(h) for h in hw]
    ts = g["t_ns"].tolist()
    best = None
    for i, hw_i in enumerate(hws):
        if hw_i is None:
            continue
        if best is not None and hw_i < best:
            window = [h for h in hws[i:i + PERSIST] if h is not None]
            if len(window) == PERSIST and all(h < best for h in window) or i == len(hws) - 1:
                out.append({"event": "hw_drop", "partition": p, "t_ns": int(ts[i]), "hw_before": best,
                            "hw_after": hw_i})
                best = hw_i
            continue
        best = hw_i if best is None else max(best, hw_i)
    return out


def isr_below(samples: pd.DataFrame, need: int, slack_ns: int = 1_000_000_000) -> list[tuple[int, int, int]]:
    """(partition, start, end) in which the cluster visibly had a leader and an ISR smaller than `need`: at least
    PERSIST consecutive samples, trimmed by `slack_ns` at each end (a broker's metadata lags the controller's)."""
    out = []
    if samples is None or not len(samples):
        return out
    for p, g in _partitions(samples):
        run: list[int] = []
        for r in _rows(g) + [None]:
            below = r is not None and _leader(r["leader"]) is not None and len(_members(r["isr"])) < need
            if below:
                run.append(int(r["t_ns"]))
                continue
            if len(run) >= PERSIST and run[-1] - run[0] > 2 * slack_ns:
                out.append((p, run[0] + slack_ns, run[-1] - slack_ns))
            run = []
    return out


def _span(e: dict) -> tuple[int, int]:
    """When a predicted event may have happened: at t_ns, or any time from since_ns to until_ns for an election
    that waited for a restarted broker's start-up, whose length Kafka does not bound (RESTART_UNFENCE_NS)."""
    return int(e.get("since_ns", e["t_ns"])), int(e.get("until_ns", e["t_ns"]))


def _near(spans: list[tuple[int, int]], t: int) -> bool:
    return any(lo - TOLERANCE_NS <= t <= hi + TOLERANCE_NS for lo, hi in spans)


def _predicted(model, partition: int, kinds: tuple[str, ...]) -> list[tuple[int, int]]:
    spans = []
    for e in model.possible_events():
        if e.get("partition") not in (partition, None):
            continue
        if "leader" in kinds and e.get("event") == "leader" and e.get("how") == "uncleanly":
            spans.append(_span(e))
        if "power" in kinds and str(e.get("event", "")).startswith("power loss"):
            spans.append(_span(e))
    return spans


def _unclean_times(model, partition: int) -> list[int]:
    return [int(e["t_ns"]) for e in model.events if e.get("partition") == partition and e.get("event") == "leader"
            and e.get("how") == "uncleanly"]


def _elections_outside_isr(model, partition: int) -> list[tuple[int, int]]:
    return [_span(e) for e in model.possible_events()
            if e.get("partition") == partition and e.get("event") == "leader"
            and e.get("how") != "from the ISR"]


def model_disagreements(model, samples: pd.DataFrame) -> list[dict]:
    """Where the model's predicted events and the cluster's visible ones disagree."""
    out = []
    events = observed_events(samples)
    for e in events:
        p, t = e["partition"], e["t_ns"]
        if e["event"] == "election" and e["how"] == "outside the visible ISR":
            if not _near(_elections_outside_isr(model, p), t):
                out.append({"kind": "unpredicted_election_outside_isr", "partition": p, "t_ns": t,
                            "detail": f"broker {e['leader']} became leader of partition {p} from outside the "
                                      f"previous ISR {e['previous_isr']} (from the ELR or uncleanly: the client "
                                      f"does not show the ELR), and the model predicted no such election"})
        if e["event"] == "election" and e["how"] == "uncleanly":
            if not _near(_predicted(model, p, ("leader",)), t):
                out.append({"kind": "unpredicted_unclean_election", "partition": p, "t_ns": t,
                            "detail": f"broker {e['leader']} became leader of partition {p} from outside the "
                                      f"previous ISR {e['previous_isr']}, which the model did not predict"})
        if e["event"] == "hw_drop":
            causes = _predicted(model, p, ("leader", "power"))
            if not any(lo - TOLERANCE_NS <= t for lo, _ in causes):
                out.append({"kind": "unpredicted_hw_drop", "partition": p, "t_ns": t,
                            "hw_before": e["hw_before"], "hw_after": e["hw_after"],
                            "detail": f"the high watermark of partition {p} fell from {e['hw_before']} to "
                                      f"{e['hw_after']}: committed records were cut off, and the model predicts "
                                      f"no unclean election or power loss that could"})
    seen_unclean = [(e["partition"], e["t_ns"]) for e in events if e["event"] == "election"
                    and e["how"] in ("uncleanly", "outside the visible ISR")]
    for e in model.events:
        if e.get("event") == "leader" and e.get("how") == "uncleanly":
            p, t = int(e["partition"]), int(e["t_ns"])
            certain = all(any(abs(ta - t) <= TOLERANCE_NS for ta in _unclean_times(alt, p)) for alt in
                          getattr(model, "alternatives", ()))      # every timing Kafka allows elects uncleanly
            if certain and len(samples) and not any(sp == p and _near([_span(e)], st) for sp, st in seen_unclean):
                out.append({"kind": "predicted_unclean_election_not_seen", "partition": p, "t_ns": t,
                            "detail": f"the model elected broker {e.get('leader')} uncleanly for partition {p}; "
                                      f"the cluster samples show no such election"})
    from kafka_chaos.checkers.model.elections import leader_mismatches  # (elections imports this module)
    flagged = {(d["partition"], d["t_ns"]) for d in out if "election" in d["kind"]}    # once per election
    out += [d for d in leader_mismatches(model, samples, events) if (d["partition"], d["t_ns"]) not in flagged]
    from kafka_chaos.checkers.model.fencings import unpredicted_fencings
    out += unpredicted_fencings(model)
    return sorted(out, key=lambda d: (d["t_ns"], -1 if d["partition"] is None else d["partition"]))


def unpredicted_losses(disagreements: list[dict]) -> list[dict]:
    """The disagreements that cut committed data: what alone can explain a lost committed record."""
    return [d for d in disagreements if d["kind"] == "unpredicted_hw_drop"]


def disagreement_lines(disagreements: list[dict] | None, limit: int = 10) -> list[str]:
    """One line per disagreement for `check`'s output (the first `limit`; verdict.json holds them all)."""
    ds = list(disagreements or [])
    lines = [f"model disagreement: {d['kind']}, "
             + (f"partition {d['partition']}" if d.get("partition") is not None else f"broker {d.get('broker')}")
             + (f" at {d['t_s']:.1f} s" if d.get("t_s") is not None else "") + f": {d['detail']}" for d in ds[:limit]]
    return lines + [f"... and {len(ds) - limit} more model disagreements (verdict.json)"] * (len(ds) > limit)
