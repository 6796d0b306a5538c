"""The report's words and tables: verdict banner, run settings, predicted against observed, anomaly examples.

Each function turns RunData into plain values for the template, so the template only lays them out.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from kafka_chaos.report.data import ANOMALY_KINDS, ReportOptions, RunData, anomaly_time_ns, offset_ranges, reads_near

PRODUCER_KEYS = ("name", "acks", "idempotent", "max_in_flight", "retries", "delivery_timeout_ms",
                 "request_timeout_ms", "linger_ms", "rate")


@dataclass
class Banner:
    """The verdict at the top of the page. `state` is valid, invalid or unchecked (it picks the colour)."""

    state: str
    title: str
    details: list[str] = field(default_factory=list)


def verdict_banner(run: RunData) -> Banner:
    verdict = run.verdict
    if verdict is None:
        return Banner("unchecked", "Not checked",
                      ["No verdict.json: this report shows the history only, with no judgement of it.",
                       f"Run `kafka-chaos check {run.path}` and then `kafka-chaos report {run.path}`."])
    violations = verdict.get("violations") or {}
    if verdict.get("valid") is None and verdict.get("status") == "incomplete":
        inc = verdict.get("incomplete") or {}
        details = list(inc.get("run") or [])
        details += [f"Partition {p}: {why}" for p, why in (inc.get("partitions") or {}).items()]
        if violations:
            details.append("Found in the partitions that completed: "
                           + ", ".join(f"{n} {k}" for k, n in violations.items()))
        return Banner("incomplete", "No verdict: the run could not be judged", details +
                      ["Lost writes are counted only where the final drain read a partition whole from a healthy "
                       "cluster. Run the scenario again."])
    if verdict.get("valid") and not violations:
        found = {k: v for k, v in (verdict.get("anomalies") or {}).items() if v}
        detail = ("Anomalies the model allows for these settings: "
                  + ", ".join(f"{v} {k}" for k, v in found.items())) if found else "No anomalies found."
        return Banner("valid", "Valid: Kafka's guarantees held", [detail])
    details = [f"{count} {kind}" + (" write" if count == 1 else " writes") * (kind == "lost")
               for kind, count in violations.items()]
    return Banner("invalid", "Invalid: guarantees violated",
                  details or ["The checker judged the run invalid (no violation counts given)."])


def run_facts(run: RunData) -> list[tuple[str, str]]:
    """Scenario, version and topic settings, in the order a reader looks for them."""
    meta, verdict_meta = run.meta, (run.verdict or {}).get("meta") or {}
    model = (run.verdict or {}).get("model") or {}
    version = meta.get("kafka_version") or model.get("kafka_version") or "not recorded"
    facts = [
        ("Run", run.run_id),
        ("Scenario", str(meta.get("scenario") or verdict_meta.get("scenario") or "not recorded")),
        ("Kafka version", str(version)),
        ("Topic", f"{meta.get('topic', 'chaos')}: {_or(meta.get('partitions'))} partitions, replication factor "
                  f"{_or(meta.get('replication_factor'))}, min.insync.replicas {_or(meta.get('min_insync_replicas'))}"),
        ("Unclean leader election", _yes_no(meta.get("unclean_leader_election", False))),
        ("ELR", _yes_no(meta.get("elr_enabled", model.get("elr_enabled")))),
        ("Consumer mode", str(meta.get("consumer_mode", "assign"))),
        ("Seed", _or(meta.get("seed", verdict_meta.get("seed")))),
        ("Started", _utc(run.start_ns)),
        ("Duration", f"{(run.end_ns - run.start_ns) / 1e9:.1f} s"),
    ]
    if run.meta_missing:
        facts.append(("meta.json", "missing: settings above are unknown"))
    return facts


def reproduce_command(run: RunData) -> str | None:
    return run.meta.get("command") or ((run.verdict or {}).get("meta") or {}).get("command")


def producer_rows(run: RunData) -> list[dict]:
    """Producer profiles from meta.json, else what the sends themselves say (name, acks, idempotence)."""
    profiles = run.meta.get("producers")
    if profiles:
        return [{key: _cell(p.get(key)) for key in PRODUCER_KEYS} for p in profiles]
    columns = [c for c in ("producer", "acks", "idempotent") if c in run.sends.columns]
    seen = run.sends[columns].drop_duplicates().sort_values(columns[:1]) if columns else pd.DataFrame()
    return [{"name": _cell(r.get("producer")), "acks": _cell(r.get("acks")), "idempotent": _cell(r.get("idempotent"))}
            | {key: "" for key in PRODUCER_KEYS[3:]} for r in seen.to_dict("records")]


def broker_settings(run: RunData) -> list[tuple[str, str]]:
    return sorted((str(k), str(v)) for k, v in (run.meta.get("broker_settings") or {}).items())


def history_counts(run: RunData) -> list[tuple[str, str]]:
    """What the history holds, counted by the report itself (no checker needed)."""
    outcome = run.sends["outcome"].value_counts()
    total = len(run.sends)
    rows = [("Sends", f"{total:,}")]
    for name, meaning in (("ok", "acknowledged"), ("fail", "certainly not written"), ("info", "indeterminate")):
        n = int(outcome.get(name, 0))
        rows.append((f"{name}", f"{n:,} ({100 * n / total:.2f}%) {meaning}" if total else "0"))
    counts = (run.verdict or {}).get("counts") or {}
    if "reads" in counts:
        rows.append(("Reads", f"{counts['reads']:,} ({counts.get('final_reads', 0):,} in the final drain)"))
    rows.append(("Fault windows", str(int((run.faults["action"] == "start").sum())) if len(run.faults) else "none"))
    return rows


@dataclass
class PredictionRow:
    """One guarantee: what the ISR model predicted beside what happened, and whether that is a violation."""

    what: str
    predicted: str
    observed: str
    status: str  # held, allowed, violated, unchecked


def prediction_rows(run: RunData) -> list[PredictionRow]:
    verdict = run.verdict
    if verdict is None:
        return []
    predicted = verdict.get("predicted") or {}
    observed = verdict.get("observed") or {}
    violations = verdict.get("violations") or {}
    lost = int(observed.get("lost", (verdict.get("anomalies") or {}).get("lost", 0)) or 0)
    lost_detail = f"{lost:,}"
    if lost and ("lost_at_risk" in observed or "lost_guaranteed" in observed):
        lost_detail += (f" ({int(observed.get('lost_guaranteed', 0)):,} guaranteed, "
                        f"{int(observed.get('lost_at_risk', 0)):,} at risk)")
    windows = predicted.get("unavailable_windows") or []
    window_s = sum(max(0, int(w[1]) - int(w[0])) for w in windows) / 1e9
    avail = verdict.get("availability") or {}
    lar = int(observed.get("lost_after_read", (verdict.get("anomalies") or {}).get("lost_after_read", 0)) or 0)
    rows = [
        PredictionRow("Acked writes lost", str(predicted.get("lost", "?")), lost_detail,
                      _status("lost", lost, predicted.get("lost"), violations)),
        PredictionRow("Duplicates", str(predicted.get("duplicates", "?")),
                      f"{int(observed.get('duplicate', 0)):,}",
                      _status("duplicate", int(observed.get("duplicate", 0)), predicted.get("duplicates"), violations)),
        PredictionRow("Reordering (non-monotonic sends)", str(predicted.get("reordering", "?")),
                      f"{int(observed.get('nonmonotonic_send', 0)):,}",
                      _status("nonmonotonic_send", int(observed.get("nonmonotonic_send", 0)),
                              predicted.get("reordering"), violations)),
        PredictionRow("Committed records lost (read, then gone)",
                      "only with a predicted unclean election or power loss", f"{lar:,}",
                      _status("lost_after_read", lar, "possible", violations)),
        PredictionRow("Unavailability",
                      f"{len(windows)} window{'s' * (len(windows) != 1)}, {window_s:.1f} s" if windows else "none",
                      f"{len(avail.get('stalls') or [])} stall(s), {float(avail.get('stalled_s', 0)):.1f} s in all, "
                      f"longest {float(avail.get('longest_s', 0)):.1f} s, {float(avail.get('unpredicted_s', 0)):.1f} s "
                      f"outside the predicted windows (writes pending, none acked for over "
                      f"{float(avail.get('threshold_s', 2)):g} s)" + _stall_split(avail.get("attribution")),
                      "violated" if "stall" in violations else
                      ("held" if not avail.get("stalls") else "allowed" if not avail.get("unpredicted_s") else
                       "explained" if (avail.get("attribution") or {}).get("statistics")
                       and not avail["attribution"].get("unexplained_s") else "noted")),
        PredictionRow("Model against the cluster", "no disagreement",
                      f"{len(verdict.get('model_disagreements') or [])} disagreement(s)",
                      "held" if not verdict.get("model_disagreements") else "noted"),
        _replica_row(verdict.get("replica_audit")),
    ]
    return rows


def _replica_row(audit: dict | None) -> PredictionRow:
    """The replica audit (checkers/replica_audit.py): ISR members identical below the high watermark."""
    promise = "ISR replicas identical below the high watermark"
    if not audit or not audit.get("ran"):
        return PredictionRow("Replica logs (end-of-run audit)", promise,
                             f"not audited: {(audit or {}).get('why', 'a verdict from before the audit')}",
                             "unchecked")
    div, diff = int(audit.get("divergences", 0)), int(audit.get("differences", 0))
    return PredictionRow("Replica logs (end-of-run audit)", promise,
                         f"{div} divergence(s) below the high watermark, {diff} difference(s) reported, not judged"
                         + ("" if audit.get("isr_whole", True) is not False else "; some ISR was not whole"),
                         "violated" if div else "held" if not diff else "noted")


def _stall_split(attribution: dict | None) -> str:
    """Whose time the stalls were (checkers/stall_cause.py), when the verdict says."""
    if not attribution:
        return ""
    return (f"; whose time: cluster {attribution['cluster_s']:.1f} s, client {attribution['client_s']:.1f} s, "
            f"unexplained {attribution['unexplained_s']:.1f} s (per stall below)")


def _status(kind: str, observed: int, predicted: str | None, violations: dict) -> str:
    if violations.get(kind):
        return "violated"
    if observed == 0:
        return "held"
    return "allowed" if predicted in ("possible", "expected") else "noted"


def anomaly_counts(run: RunData) -> list[dict]:
    """Count per kind (violations and allowed), kinds in the order the checker lists them."""
    anomalies = run.anomalies
    if anomalies is None or anomalies.empty:
        return []
    rows = []
    kinds = [k for k in ANOMALY_KINDS if k in set(anomalies["kind"])] + sorted(
        set(anomalies["kind"]) - set(ANOMALY_KINDS))
    for kind in kinds:
        of_kind = anomalies[anomalies["kind"] == kind]
        violation = int((of_kind["classification"] == "violation").sum())
        rows.append({"kind": kind, "total": len(of_kind), "violation": violation, "allowed": len(of_kind) - violation})
    return rows


@dataclass
class Neighbour:
    offset: int
    value: str | None   # None: nothing was read at this offset
    is_anomaly: bool


@dataclass
class ExampleRow:
    """One anomaly with what a reader needs to understand it."""

    op_id: str
    producer: str
    partition: str
    offset: str
    value: str
    at_s: str
    classification: str
    durability: str
    leader_at_ack: str
    isr_at_ack: str
    neighbours: list[Neighbour]
    reason: str
    cause: str = ""          # an allowed row's excuse and the event it blames, by id and time (checkers.excuses)


def anomaly_examples(run: RunData, options: ReportOptions) -> dict[str, list[ExampleRow]]:
    """The first examples of each kind: violations first, then in time order."""
    anomalies = run.anomalies
    if anomalies is None or anomalies.empty:
        return {}
    frame = anomalies.assign(_t=anomaly_time_ns(anomalies),
                             _v=(anomalies["classification"] != "violation").astype(int))
    firsts = {}
    for row in anomaly_counts(run):
        kind = row["kind"]
        first = frame[frame["kind"] == kind].sort_values(["_v", "_t"], na_position="last")
        firsts[kind] = first.head(options.examples_per_kind).to_dict("records")
    places = [(p, o) for rows in firsts.values() for r in rows
              if (p := _int_or_none(r.get("partition"))) is not None
              and (o := _int_or_none(r.get("offset"))) is not None]
    reads = reads_near(run.path, places, options.neighbour_span)
    return {kind: [_example(run, reads, r, options) for r in rows] for kind, rows in firsts.items()}


def _example(run: RunData, reads: pd.DataFrame, r: dict, options: ReportOptions) -> ExampleRow:
    partition, offset = _int_or_none(r.get("partition")), _int_or_none(r.get("offset"))
    ack_ns = _int_or_none(r.get("t_complete_ns")) or _int_or_none(r.get("t_invoke_ns"))
    leader, isr = _cluster_at(run, partition, ack_ns)
    t_ns = _int_or_none(r.get("_t"))
    return ExampleRow(
        op_id=_cell(_int_or_none(r.get("op_id"))), producer=_cell(r.get("producer")), partition=_cell(partition),
        offset=_cell(offset), value=_cell(r.get("value")),
        at_s=f"{(t_ns - run.start_ns) / 1e9:.3f} s" if t_ns is not None else "",
        classification=_cell(r.get("classification")), durability=_cell(r.get("durability")),
        leader_at_ack=leader, isr_at_ack=isr,
        neighbours=_neighbours(reads, partition, offset, options.neighbour_span), reason=_cell(r.get("reason")),
        cause=_cause(run, r),
    )


def _cause(run: RunData, r: dict) -> str:
    """"<excuse>: <cause id> at <t> s" for an allowed row that names its cause; "" otherwise."""
    excuse, cause_id, t_ns = r.get("excuse"), r.get("cause_id"), _int_or_none(r.get("cause_t_ns"))
    if not isinstance(excuse, str) or not isinstance(cause_id, str):
        return ""
    at = f" at {(t_ns - run.start_ns) / 1e9:.3f} s" if t_ns is not None and run.start_ns else ""
    return f"{excuse}: {cause_id}{at}"


def _cluster_at(run: RunData, partition: int | None, t_ns: int | None) -> tuple[str, str]:
    """Leader and ISR of the partition at the last sample at or before t_ns."""
    cluster = run.cluster
    if cluster.empty or partition is None or t_ns is None:
        return "unknown", "unknown"
    rows = cluster[(cluster["partition"] == partition) & (cluster["t_ns"] <= t_ns)]
    if rows.empty:
        return "unknown (no sample yet)", "unknown"
    last = rows.loc[rows["t_ns"].idxmax()]
    leader = "none" if pd.isna(last["leader"]) else str(int(last["leader"]))
    isr = last["isr"]
    isr_text = "{" + ",".join(str(int(m)) for m in isr) + "}" if isr is not None else "unknown"
    age_s = (t_ns - int(last["t_ns"])) / 1e9
    return leader, f"{isr_text} ({age_s:.1f} s before)"


def _neighbours(reads: pd.DataFrame, partition: int | None, offset: int | None, span: int) -> list[Neighbour]:
    if partition is None or offset is None:
        return []
    lo, hi = offset - span, offset + span
    rows = reads[(reads["partition"] == partition) & (reads["offset"] >= lo) & (reads["offset"] <= hi)]
    read = dict(zip(rows["offset"].astype(int), rows["value"]))
    return [Neighbour(o, read.get(o), o == offset) for o in range(max(0, lo), hi + 1)]


def lost_offsets(run: RunData, options: ReportOptions) -> list[dict]:
    """Per partition: how many acked writes were lost, and their offsets as ranges."""
    anomalies = run.anomalies
    if anomalies is None or anomalies.empty:
        return []
    lost = anomalies[(anomalies["kind"] == "lost") & anomalies["partition"].notna()]
    rows = []
    for partition, of_partition in lost.groupby(lost["partition"].astype(int)):
        ranges, more = offset_ranges(of_partition["offset"].dropna().astype(int).tolist(), options.max_offset_ranges)
        rows.append({"partition": partition, "count": len(of_partition),
                     "violation": int((of_partition["classification"] == "violation").sum()),
                     "ranges": ", ".join(ranges) + (f" and {more} more ranges" if more else "")})
    return rows


@dataclass
class FileLink:
    label: str
    href: str    # relative to the results directory, so the link works wherever the directory is copied
    size: str


def file_links(results_dir: Path) -> list[FileLink]:
    """Broker logs and history files that exist in the results directory."""
    candidates = [results_dir / "meta.json", results_dir / "verdict.json", results_dir / "anomalies.parquet"]
    candidates += sorted((results_dir / "history").glob("*.parquet"))
    candidates += sorted((results_dir / "logs").glob("*")) if (results_dir / "logs").is_dir() else []
    if (results_dir / "history" / "journal").is_dir():
        candidates.append(results_dir / "history" / "journal")
    links = []
    for file in candidates:
        if not file.exists():
            continue
        rel = file.relative_to(results_dir).as_posix()
        size = _size(file.stat().st_size) if file.is_file() else "directory"
        links.append(FileLink(rel, rel + ("/" if file.is_dir() else ""), size))
    return links


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _utc(t_ns: int) -> str:
    return dt.datetime.fromtimestamp(t_ns / 1e9, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _yes_no(value) -> str:
    if value is None:
        return "not recorded"
    return "enabled" if value else "disabled"


def _or(value) -> str:
    return "?" if value is None else str(value)


def _int_or_none(value) -> int | None:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _cell(value) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)
