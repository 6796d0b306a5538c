"""A real run's history tiled up to any number of sends: the benchmark's `real` shape (bench/check_bench.py).

Tile k is the real run shifted by k times its span: times by k * (end_ns - start_ns + 1 s), offsets by k times the
partition's end (meta.json's drain ends, or the highest offset seen + 1), op ids by k times the largest + 1, and
values, live consumers and fault details made distinct per tile (value "0-17" becomes "0-17~k", consumer "c0"
becomes "c0~k": each tile's live consumers are new ones, so no consumer steps from one tile into the next). The
final drain stays one consumer, its seq shifted. The faults and cluster samples are the real run's, repeated: the
ISR model replays every tile's faults. Whatever anomalies the real run had, the tiled one has k times over, at the
same places in each tile. The last tile is cut at `sends` (its reads kept only for the sends kept, the drain's).
The node logs' fencing and fatal-fault lines are tiled too, their times shifted like the rest (the model replays
each tile with the controller's logged unfence and fence times, as it did the real run); the client logs and the
journal are not copied: the check has no client statistics to read.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_chaos.history.controller_log import parse_line
from kafka_chaos.history.schema import CLUSTER_SCHEMA, FAULTS_SCHEMA, READS_SCHEMA, SENDS_SCHEMA

GAP_NS = 1_000_000_000     # between one tile's end and the next one's start


def _suffix(col: pa.Array, k: int) -> pa.Array:
    return pc.binary_join_element_wise(col, pa.scalar(f"~{k}"), "")


def _shift_offsets(table: pa.Table, ends: np.ndarray, k: int) -> pa.Array:
    part = table["partition"].to_numpy(zero_copy_only=False)
    off = table["offset"]
    shifted = pc.add(off, pa.array(ends[np.nan_to_num(part, nan=0).astype(np.int64)] * k))
    return pc.if_else(pc.less(off, 0), off, shifted)      # -1 (none) stays -1


def tile_run(source: Path, out: Path, sends: int) -> Path:
    """Write `out`, a results directory of `source`'s history tiled to `sends` sends, and return it."""
    source, out = Path(source), Path(out)
    meta = json.loads((source / "meta.json").read_text())
    h = source / "history"
    s = pq.read_table(h / "sends.parquet", schema=SENDS_SCHEMA)
    r = pq.read_table(h / "reads.parquet", schema=READS_SCHEMA)
    faults = pq.read_table(h / "faults.parquet", schema=FAULTS_SCHEMA) if (h / "faults.parquet").exists() else None
    cluster = pq.read_table(h / "cluster.parquet", schema=CLUSTER_SCHEMA)
    parts = int(meta["partitions"])
    drain = {int(p): int(e) for p, e in ((meta.get("drain") or {}).get("ends") or {}).items()}
    seen = [int(pc.max(pc.filter(t["offset"], pc.equal(t["partition"], p))).as_py() or -1) + 1
            if len(t) else 0 for t in (s, r) for p in range(parts)]
    ends = np.array([max(drain.get(p, 0), seen[p], seen[parts + p]) for p in range(parts)], dtype=np.int64)
    span = int(meta["end_ns"]) - int(meta["start_ns"]) + GAP_NS
    ops = int(pc.max(s["op_id"]).as_py()) + 1
    fin = r.filter(pc.equal(r["phase"], "final"))
    live = r.filter(pc.not_equal(r["phase"], "final"))
    seqs = int(pc.max(fin["seq"]).as_py() or -1) + 1 if len(fin) else 0
    tiles = -(-sends // len(s))
    (out / "history").mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(out / "history/sends.parquet", SENDS_SCHEMA) as sw, \
            pq.ParquetWriter(out / "history/reads.parquet", READS_SCHEMA) as rw:
        finals = []
        for k in range(tiles):
            ts = s if (k + 1) * len(s) <= sends else s.slice(0, sends - k * len(s))
            sw.write_table(_tile_sends(ts, k, ends, span, ops))
            kept = None if ts is s else pc.is_in(live["value"], value_set=ts["value"])
            lv = live if kept is None else live.filter(kept)
            rw.write_table(_tile_reads(lv, k, ends, span, consumer=True))
            ft = fin if kept is None else fin.filter(pc.is_in(fin["value"], value_set=ts["value"]))
            finals.append(_tile_reads(ft, k, ends, span, consumer=False, seq_shift=k * seqs))
        for t in finals:         # the drain: after every live read, as in a real history
            rw.write_table(t)
    if faults is not None:
        pq.write_table(pa.concat_tables([_tile_faults(faults, k, span) for k in range(tiles)]),
                       out / "history/faults.parquet")
    pq.write_table(pa.concat_tables([_tile_cluster(cluster, k, span, ends) for k in range(tiles)]),
                   out / "history/cluster.parquet")
    _tile_logs(source / "logs", out / "logs", tiles, span)
    meta.update(run_id=out.name, end_ns=int(meta["start_ns"]) + tiles * span - GAP_NS,
                command=f"tiled x{tiles} to {sends} sends from {source.name}: {meta.get('command')}",
                drain={**(meta.get("drain") or {}), "ends": {str(p): int(e * tiles) for p, e in enumerate(ends)},
                       "records": int(sum(ends) * tiles)})
    if "duration_s" in meta:
        meta["duration_s"] = round(tiles * span / 1e9, 3)
    meta.pop("fault_plan", None)
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return out


def _tile_sends(t: pa.Table, k: int, ends: np.ndarray, span: int, ops: int) -> pa.Table:
    cols = {n: t[n] for n in t.column_names}
    cols.update(op_id=pc.add(t["op_id"], k * ops), value=_suffix(t["value"], k),
                offset=_shift_offsets(t, ends, k), t_invoke_ns=pc.add(t["t_invoke_ns"], k * span),
                t_complete_ns=pc.add(t["t_complete_ns"], k * span))
    return pa.table(cols, schema=SENDS_SCHEMA)


def _tile_reads(t: pa.Table, k: int, ends: np.ndarray, span: int, consumer: bool, seq_shift: int = 0) -> pa.Table:
    cols = {n: t[n] for n in t.column_names}
    cols.update(value=_suffix(t["value"], k), offset=_shift_offsets(t, ends, k), t_ns=pc.add(t["t_ns"], k * span),
                seq=pc.add(t["seq"], seq_shift))
    if consumer:
        cols["consumer"] = _suffix(t["consumer"], k)
    return pa.table(cols, schema=READS_SCHEMA)


def _tile_faults(t: pa.Table, k: int, span: int) -> pa.Table:
    cols = {n: t[n] for n in t.column_names}
    cols["t_ns"] = pc.add(t["t_ns"], k * span)
    details = []
    for d in t["details"].to_pylist():
        try:
            d = json.loads(d) if d else {}
        except ValueError:
            d = {}
        if isinstance(d, dict) and d.get("applied_ns"):
            d["applied_ns"] = int(d["applied_ns"]) + k * span
        details.append(json.dumps(d, sort_keys=True))
    cols["details"] = pa.array(details, pa.string())
    return pa.table(cols, schema=FAULTS_SCHEMA)


def _tile_cluster(t: pa.Table, k: int, span: int, ends: np.ndarray) -> pa.Table:
    cols = {n: t[n] for n in t.column_names}
    cols["t_ns"] = pc.add(t["t_ns"], k * span)
    hw, part = t["high_watermark"], t["partition"].to_numpy(zero_copy_only=False)
    shifted = pc.add(hw, pa.array(ends[part.astype(np.int64)] * k).cast(hw.type))
    cols["high_watermark"] = pc.if_else(pc.less(hw, 0), hw, shifted)
    return pa.table(cols, schema=CLUSTER_SCHEMA)


_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")
CLIENT_LOGS = ("clients.log", "java-clients.log")


def _tile_logs(source: Path, out: Path, tiles: int, span: int) -> None:
    """The node logs' lines the checker reads (history.controller_log: fencing events, a fatal fault and the line
    after it), once per tile, each tile's times shifted by k * span (to the millisecond, as the logs write them)."""
    if not source.is_dir():
        return
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.glob("*.log")):
        if path.name in CLIENT_LOGS:
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        kept = []
        for i, line in enumerate(lines):
            if parse_line(line) is not None:
                kept.append(line)
            elif "Encountered fatal fault" in line:
                kept += [line] + ([lines[i + 1]] if i + 1 < len(lines) and not _STAMP.match(lines[i + 1]) else [])
        with (out / path.name).open("w", encoding="utf-8") as f:
            for k in range(tiles):
                shift = timedelta(milliseconds=k * span // 1_000_000)
                for line in kept:
                    f.write(_STAMP.sub(lambda m: "[" + (datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f") + shift)
                                       .strftime("%Y-%m-%d %H:%M:%S,%f")[:-3] + "]", line) + "\n")
