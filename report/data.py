"""Loading a results directory for the report, and the small frames the report draws.

The report never plots raw rows: a 1M-operation history becomes a few thousand time buckets, the cluster samples
become their change points, and anomalies are capped per kind. That keeps report.html small and quick to render
whatever the history's size. Everything here reads the files docs/history.md describes, with pandas and pyarrow.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from kafka_chaos.base.errors import HarnessError
from kafka_chaos.history.layout import sends_path
from kafka_chaos.history.meta import read_meta_dict
from kafka_chaos.history.schema import ANOMALY_KINDS  # noqa: F401  (re-exported for the tables)

SEND_COLUMNS = ["op_id", "producer", "acks", "idempotent", "partition", "offset", "outcome", "error",
                "t_invoke_ns", "t_complete_ns"]
READ_COLUMNS = ["phase", "partition", "offset", "value", "t_ns"]
NICE_BUCKETS_S = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600)


@dataclass(frozen=True)
class ReportOptions:
    """How far the report downsamples: these bound its size, not the history's."""

    max_buckets: int = 1500          # time buckets in the timeline
    max_markers_per_kind: int = 1000  # anomaly markers drawn per kind (the tables still count all)
    examples_per_kind: int = 10      # rows per anomaly kind in the example tables
    max_partitions_plotted: int = 8  # partitions drawn in the per-partition chart
    neighbour_span: int = 2          # offsets read either side of an anomaly's offset
    max_offset_ranges: int = 40      # lost-offset ranges listed per partition


@dataclass
class RunData:
    """One results directory, as read from disk. Optional files are None (or empty frames) when absent."""

    path: Path
    meta: dict
    sends: pd.DataFrame
    faults: pd.DataFrame
    cluster: pd.DataFrame
    verdict: dict | None
    anomalies: pd.DataFrame | None
    meta_missing: bool = False

    @property
    def run_id(self) -> str:
        return str(self.meta.get("run_id") or self.path.name)

    @property
    def start_ns(self) -> int:
        """The run's time zero: the workload start, else the first send."""
        if self.meta.get("start_ns") is not None:
            return int(self.meta["start_ns"])
        if len(self.sends):
            return int(self.sends["t_invoke_ns"].min())
        return 0

    @property
    def end_ns(self) -> int:
        if self.meta.get("end_ns") is not None:
            return int(self.meta["end_ns"])
        ends = [int(self.sends["t_invoke_ns"].max())] if len(self.sends) else [self.start_ns]
        if len(self.sends) and self.sends["t_complete_ns"].notna().any():
            ends.append(int(self.sends["t_complete_ns"].max()))
        if len(self.faults):
            ends.append(int(self.faults["t_ns"].max()))
        return max(ends)


def load_run(results_dir: Path | str) -> RunData:
    """Read what the report needs. No history (no sends.parquet) is bad input: HarnessError."""
    path = Path(results_dir)
    if not path.is_dir():
        raise HarnessError(f"{path} is not a directory",
                           "pass a results directory, e.g. results/<run_id>")
    if not sends_path(path).is_file():
        raise HarnessError(f"{path} has no history: {sends_path(path)} is missing",
                           f"if the run crashed, rebuild the history with `kafka-chaos history repair {path}`")
    meta, meta_missing = _read_meta(path)
    sends = _read_parquet(sends_path(path), SEND_COLUMNS)
    faults = _read_optional(path / "history" / "faults.parquet")
    cluster = _read_optional(path / "history" / "cluster.parquet")
    verdict = _read_json(path / "verdict.json") if (path / "verdict.json").is_file() else None
    anomalies = _read_optional(path / "anomalies.parquet") if (path / "anomalies.parquet").is_file() else None
    return RunData(path=path, meta=meta, sends=sends, faults=faults, cluster=cluster, verdict=verdict,
                   anomalies=anomalies, meta_missing=meta_missing)


def reads_near(results_dir: Path, places: list[tuple[int, int]], span: int) -> pd.DataFrame:
    """What was read at offsets within `span` of each (partition, offset): the context of an anomaly.

    Reads only those rows (a pushed-down filter), so a history of millions of reads costs little. Prefers the
    final drain, which shows what the log held; falls back to live reads when there was no drain.
    Sorted by partition and offset, one row per offset.
    """
    path = Path(results_dir) / "history" / "reads.parquet"
    empty = pd.DataFrame({"partition": pd.Series([], dtype="int32"), "offset": pd.Series([], dtype="int64"),
                          "value": pd.Series([], dtype="object")})
    if not places or not path.is_file():
        return empty
    where = None
    for partition, offset in sorted(set(places)):
        near = ((pc.field("partition") == partition) & (pc.field("offset") >= offset - span)
                & (pc.field("offset") <= offset + span))
        where = near if where is None else where | near
    try:
        reads = ds.dataset(path, format="parquet").to_table(columns=READ_COLUMNS, filter=where).to_pandas()
    except (OSError, pa.ArrowInvalid) as e:
        raise HarnessError(f"cannot read {path}: {e}", "rebuild the history with `kafka-chaos history repair`")
    final = reads[reads["phase"] == "final"]
    if len(final):
        reads = final
    reads = reads.sort_values(["partition", "offset", "t_ns"]).drop_duplicates(["partition", "offset"])
    return reads[["partition", "offset", "value"]].reset_index(drop=True)


def _read_meta(path: Path) -> tuple[dict, bool]:
    meta = read_meta_dict(path)
    return (meta, False) if meta is not None else ({"run_id": path.name}, True)


def _read_json(file: Path) -> dict:
    try:
        return json.loads(file.read_text())
    except (OSError, ValueError) as e:
        raise HarnessError(f"cannot read {file}: {e}", "re-run `kafka-chaos check` or fix the file by hand")


_NULLABLE_INTS = {pa.int32(): pd.Int32Dtype(), pa.int64(): pd.Int64Dtype()}


def _read_parquet(file: Path, columns: list[str] | None) -> pd.DataFrame:
    try:
        present = set(pq.read_schema(file).names)
        wanted = [c for c in columns if c in present] if columns else None
        table = pq.read_table(file, columns=wanted)
        try:
            return table.to_pandas()
        except pa.ArrowInvalid:     # anomalies.parquet of an older check: pandas metadata asking for Float64 times
            return table.to_pandas(ignore_metadata=True, types_mapper=_NULLABLE_INTS.get)
    except OSError as e:
        raise HarnessError(f"cannot read {file}: {e}", "rebuild the history with `kafka-chaos history repair`")


def _read_optional(file: Path) -> pd.DataFrame:
    return _read_parquet(file, None) if file.is_file() else pd.DataFrame()


# ---------------------------------------------------------------------------------------------------------------
# Downsampled frames


@dataclass
class Timeline:
    """Operations per second and latency per time bucket. Times are seconds since the run's start."""

    bucket_s: float
    t_s: np.ndarray
    ok_per_s: np.ndarray
    fail_per_s: np.ndarray
    info_per_s: np.ndarray
    latency_ms: dict[str, np.ndarray] = field(default_factory=dict)  # "p50", "p95", "p99", "max"


def bucket_width_s(duration_s: float, max_buckets: int) -> float:
    """A round bucket width: one second for ordinary runs, wider for long ones, finer for very short ones."""
    wanted = max(duration_s / max_buckets, min(1.0, duration_s / 60))
    for width in NICE_BUCKETS_S:
        if width >= wanted:
            return float(width)
    return float(math.ceil(wanted / 3600) * 3600)


def op_time_ns(sends: pd.DataFrame) -> pd.Series:
    """When an operation ended: its completion, or its invocation if it never completed."""
    return sends["t_complete_ns"].fillna(sends["t_invoke_ns"]).astype("int64")


def timeline(run: RunData, options: ReportOptions) -> Timeline:
    t0 = run.start_ns
    duration_s = max((run.end_ns - t0) / 1e9, 1e-3)
    width = bucket_width_s(duration_s, options.max_buckets)
    n = int(math.floor(duration_s / width)) + 1
    sends = run.sends
    bucket = np.clip(((op_time_ns(sends).to_numpy() - t0) / 1e9 // width).astype(np.int64), 0, n - 1)
    outcome = sends["outcome"].to_numpy()
    rates = {name: np.bincount(bucket[outcome == name], minlength=n) / width for name in ("ok", "fail", "info")}
    latency = _latency_quantiles(sends, bucket, n)
    return Timeline(bucket_s=width, t_s=np.arange(n) * width, ok_per_s=rates["ok"], fail_per_s=rates["fail"],
                    info_per_s=rates["info"], latency_ms=latency)


def _latency_quantiles(sends: pd.DataFrame, bucket: np.ndarray, n: int) -> dict[str, np.ndarray]:
    ok = (sends["outcome"] == "ok").to_numpy() & sends["t_complete_ns"].notna().to_numpy()
    out = {name: np.full(n, np.nan) for name in ("p50", "p95", "p99", "max")}
    if not ok.any():
        return out
    latency_ms = (sends["t_complete_ns"].to_numpy()[ok].astype(np.int64)
                  - sends["t_invoke_ns"].to_numpy()[ok].astype(np.int64)) / 1e6
    grouped = pd.Series(latency_ms).groupby(bucket[ok])
    quantiles = grouped.quantile([0.5, 0.95, 0.99]).unstack()
    for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        out[name][quantiles.index.to_numpy()] = quantiles[q].to_numpy()
    maxima = grouped.max()
    out["max"][maxima.index.to_numpy()] = maxima.to_numpy()
    return out


@dataclass(frozen=True)
class FaultWindow:
    """One fault from its start to its heal (or to the end of the run when it never healed)."""

    fault: str
    nodes: tuple[int, ...]
    effect: str
    start_s: float
    end_s: float
    healed: bool

    @property
    def label(self) -> str:
        nodes = ",".join(str(n) for n in self.nodes)
        return f"{self.fault} [{nodes}]" if nodes else self.fault


def fault_windows(run: RunData) -> list[FaultWindow]:
    """Pairs each start with the next heal of the same fault on the same nodes."""
    if run.faults.empty:
        return []
    t0, end_s = run.start_ns, (run.end_ns - run.start_ns) / 1e9
    open_windows: dict[tuple, list[tuple[float, str]]] = {}
    windows: list[FaultWindow] = []
    for row in run.faults.sort_values("t_ns", kind="stable").itertuples(index=False):
        nodes = tuple(int(n) for n in (row.nodes if row.nodes is not None else ()))
        key = (row.fault, nodes)
        t_s = (int(row.t_ns) - t0) / 1e9
        if row.action == "start":
            open_windows.setdefault(key, []).append((t_s, _effect(row.details)))
        elif row.action == "heal" and open_windows.get(key):
            start_s, effect = open_windows[key].pop(0)
            windows.append(FaultWindow(row.fault, nodes, effect, start_s, t_s, healed=True))
    for (fault, nodes), starts in open_windows.items():
        for start_s, effect in starts:
            windows.append(FaultWindow(fault, nodes, effect, start_s, max(end_s, start_s), healed=False))
    return sorted(windows, key=lambda w: w.start_s)


def _effect(details) -> str:
    try:
        return str(json.loads(details).get("effect", "")) if details else ""
    except (ValueError, AttributeError):
        return ""


@dataclass
class PartitionSeries:
    """Leader and ISR size of one partition at each change, as step functions of time (seconds)."""

    partition: int
    t_s: np.ndarray
    leader: np.ndarray      # -1: no leader
    isr_size: np.ndarray
    elr_size: np.ndarray | None


def partition_series(run: RunData, partitions: list[int]) -> list[PartitionSeries]:
    """Keeps only the samples where leader, ISR size or ELR size changed, plus each partition's last sample."""
    cluster = run.cluster
    if cluster.empty:
        return []
    t0 = run.start_ns
    has_elr = "elr" in cluster.columns and cluster["elr"].notna().any()
    out = []
    for partition in partitions:
        rows = cluster[cluster["partition"] == partition].sort_values("t_ns")
        if rows.empty:
            continue
        leader = rows["leader"].fillna(-1).astype("int64").to_numpy()
        isr = rows["isr"].map(lambda v: 0 if v is None else len(v)).to_numpy()
        elr = rows["elr"].map(lambda v: 0 if v is None else len(v)).to_numpy() if has_elr else None
        changed = np.ones(len(rows), dtype=bool)
        changed[1:] = (leader[1:] != leader[:-1]) | (isr[1:] != isr[:-1])
        if elr is not None:
            changed[1:] |= elr[1:] != elr[:-1]
        changed[-1] = True
        t_s = (rows["t_ns"].to_numpy().astype(np.int64) - t0) / 1e9
        out.append(PartitionSeries(partition, t_s[changed], leader[changed], isr[changed],
                                   elr[changed] if elr is not None else None))
    return out


def partitions_to_plot(run: RunData, options: ReportOptions) -> list[int]:
    """Partitions with anomalies first, then the lowest ids, up to the plotting limit."""
    known = sorted(set(int(p) for p in run.cluster["partition"].unique())) if not run.cluster.empty else []
    if not known:
        return []
    with_anomalies: list[int] = []
    if run.anomalies is not None and len(run.anomalies):
        counts = run.anomalies["partition"].dropna().astype(int).value_counts()
        with_anomalies = [p for p in counts.index if p in known]
    ordered = with_anomalies + [p for p in known if p not in with_anomalies]
    return sorted(ordered[: options.max_partitions_plotted])


def anomaly_time_ns(anomalies: pd.DataFrame) -> pd.Series:
    """An anomaly's place on the timeline: the ack time for writes, else the first read, else the invocation."""
    t = anomalies["t_complete_ns"].copy() if "t_complete_ns" in anomalies else pd.Series(pd.NA, index=anomalies.index)
    for column in ("t_read_ns", "t_invoke_ns"):
        if column in anomalies:
            t = t.fillna(anomalies[column])
    return t


def anomaly_markers(run: RunData, options: ReportOptions) -> pd.DataFrame:
    """Anomalies with a time, at most `max_markers_per_kind` of each kind (evenly spread over the kind's rows)."""
    columns = ["kind", "t_s", "partition", "offset", "classification"]
    if run.anomalies is None or run.anomalies.empty:
        return pd.DataFrame(columns=columns)
    frame = run.anomalies.assign(t_ns=anomaly_time_ns(run.anomalies))
    frame = frame[frame["t_ns"].notna() & (frame["kind"] != "recovered")]
    parts = []
    for _, rows in frame.groupby("kind", sort=False):
        rows = rows.sort_values("t_ns")
        if len(rows) > options.max_markers_per_kind:
            rows = rows.iloc[np.linspace(0, len(rows) - 1, options.max_markers_per_kind).astype(int)]
        parts.append(rows)
    if not parts:
        return pd.DataFrame(columns=columns)
    frame = pd.concat(parts)
    frame["t_s"] = (frame["t_ns"].astype("int64") - run.start_ns) / 1e9
    return frame.reindex(columns=columns).reset_index(drop=True)


def offset_ranges(offsets: list[int], limit: int) -> tuple[list[str], int]:
    """Sorted offsets as "a-b" runs, at most `limit` of them; also returns how many runs were left out."""
    runs: list[str] = []
    values = sorted(set(int(o) for o in offsets))
    start = prev = None
    for o in values + [None]:
        if start is not None and (o is None or o != prev + 1):
            runs.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if o is not None and start is None:
            start = o
        prev = o
    return runs[:limit], max(0, len(runs) - limit)


def availability_bands(run: RunData) -> list[tuple[int, float, float, str]]:
    """(partition, start s, end s, "predicted" | "observed"): the model's unavailable windows and the stalls the
    clients saw, in seconds since the run's start, for shading beside each other."""
    verdict = run.verdict or {}
    out = []
    for w in (verdict.get("predicted") or {}).get("unavailable_windows") or []:
        out.append((int(w[2]), (int(w[0]) - run.start_ns) / 1e9, (int(w[1]) - run.start_ns) / 1e9, "predicted"))
    for s in (verdict.get("availability") or {}).get("stalls") or []:
        out.append((int(s[2]), (int(s[0]) - run.start_ns) / 1e9, (int(s[1]) - run.start_ns) / 1e9, "observed"))
    return out
