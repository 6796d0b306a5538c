"""The replica audit's judgement (`replica_divergence`, `replica_difference`; history/replicas.parquet).

Kafka's replication invariant: the replicas in a partition's ISR hold identical logs up to its high watermark. A
follower appends the leader's batches as they are, partitionLeaderEpoch, producer id, epoch and sequence included
(ReplicaFetcherThread.processPartitionData -> UnifiedLog.appendAsFollower, which assigns no offsets and keeps the
batch's epoch); the leader advances the high watermark only to an offset every ISR member has fetched past
(Partition.maybeIncrementLeaderHW over the ISR's log end offsets); and a replica whose log differs from the leader's
at or below that point is truncated to it before it fetches (KIP-101 / KIP-279, the leader epoch's end offset:
AbstractFetcherThread.truncateToEpochEndOffsets). Unclean leader election does not void it: it removes records from
every replica alike, after which the new ISR is again identical below its high watermark.

So, offset by offset, among the replicas the audit read: a difference below the partition's high watermark (the
leader's, read once the ISR was whole) between two replicas that are both in the ISR is `replica_divergence`, always
a violation: a differing record (value digest, leader epoch, producer id, producer epoch, sequence, control flag, a
batch whose CRC fails), or one such replica lacking an offset the other holds, above the first's log start. One
instance per stretch of consecutive such offsets, naming its offsets, the replicas and what each held there (epochs
included), and the replicas' leader-epoch checkpoints.

Reported, not judged (`replica_difference`, counted): a difference at or above the high watermark (the leader may
hold what the followers have not fetched yet), one involving a replica outside the ISR, leader-epoch checkpoints of
ISR members that differ in an epoch starting below the high watermark (a leader assigns its epoch on election even
if it appends nothing, Partition.makeLeader -> LeaderEpochFileCache.assign, so a follower may never see that epoch),
and a replica the audit could not read. A run without the audit's files (one before it) gets neither kind.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kafka_chaos.checkers.excuses import NO_CLAIM
from kafka_chaos.checkers.instances import rows_frame
from kafka_chaos.history.replicas import read_replicas

DIVERGENCE, DIFFERENCE = "replica_divergence", "replica_difference"
COLUMNS = ["kind", "partition", "offset", "value", "multiplicity", "classification", "reason", *NO_CLAIM]
FIELDS = ("digest", "leader_epoch", "producer_id", "producer_epoch", "sequence", "is_control", "crc_ok")
ABSENT = "(absent)"


def read(run_dir: Path | str):
    """The audit's (records, replica logs), or None for a run without it."""
    return read_replicas(run_dir)


def find(records: pd.DataFrame, logs: pd.DataFrame) -> pd.DataFrame:
    """The judged rows of both kinds, over every partition the audit read."""
    rows: list[dict] = []
    for partition, part_logs in logs.groupby("partition", sort=True):
        part = records[records["partition"] == partition]
        rows += _partition(int(partition), part, part_logs.reset_index(drop=True))
    return rows_frame(rows, COLUMNS)


def hw_of(logs: pd.DataFrame) -> int | None:
    """The partition's high watermark: the leader's at the audit; else the highest checkpointed by an ISR member."""
    known = logs["hw"].dropna()
    if len(known):
        return int(known.max())
    cp = logs.loc[logs["in_isr"].astype(bool), "checkpoint_hw"].dropna()
    return int(cp.max()) if len(cp) else None


def _signatures(part: pd.DataFrame) -> pd.Series:
    s = part["digest"].astype(str)
    for f in FIELDS[1:]:
        s = s + "|" + part[f].astype(str)
    return s


def _wide(part: pd.DataFrame, logs: pd.DataFrame) -> pd.DataFrame:
    """offset x broker: each replica's record signature, ABSENT where it lacks the offset, None where the offset is
    below its log start (deleted by retention: not compared)."""
    brokers = [int(b) for b in logs["broker"]]
    sig = part.assign(sig=_signatures(part))
    wide = sig.pivot_table(index="offset", columns="broker", values="sig", aggfunc="first")
    wide = wide.reindex(columns=brokers).astype(object).where(lambda w: w.notna(), ABSENT)
    for b, start in zip(brokers, logs["log_start_offset"]):
        if pd.notna(start):
            wide.loc[wide.index < int(start), b] = None
    return wide.sort_index()


def _differs(wide: pd.DataFrame, cols: list[int]) -> np.ndarray:
    """Offsets at which the replicas `cols` (where compared) hold more than one content."""
    if len(cols) < 2 or not len(wide):
        return np.zeros(len(wide), dtype=bool)
    return (wide[cols].nunique(axis=1, dropna=True) > 1).to_numpy()


def _stretches(offsets: np.ndarray) -> list[tuple[int, int, int]]:
    """(first, last, count) of each run of consecutive offsets."""
    if not len(offsets):
        return []
    breaks = np.flatnonzero(np.diff(offsets) != 1)
    starts, ends = np.r_[0, breaks + 1], np.r_[breaks, len(offsets) - 1]
    return [(int(offsets[a]), int(offsets[b]), int(b - a + 1)) for a, b in zip(starts, ends)]


def _partition(partition: int, part: pd.DataFrame, logs: pd.DataFrame) -> list[dict]:
    rows = [_unread(partition, r) for r in logs.itertuples() if r.error]
    logs = logs[logs["error"].isna()].reset_index(drop=True)
    hw = hw_of(logs)
    if len(logs) < 2:
        return rows
    wide = _wide(part, logs)
    isr = [int(b) for b, i in zip(logs["broker"], logs["in_isr"]) if i]
    below = wide.index.to_numpy() < (hw if hw is not None else -1)
    judged = _differs(wide, isr) & below
    anywhere = _differs(wide, [int(b) for b in logs["broker"]]) & ~judged
    for first, last, n in _stretches(wide.index.to_numpy()[judged]):
        rows.append(_row(DIVERGENCE, partition, part, wide, logs, hw, first, last, n, isr))
    for first, last, n in _stretches(wide.index.to_numpy()[anywhere]):
        rows.append(_row(DIFFERENCE, partition, part, wide, logs, hw, first, last, n, isr))
    if (epochs := _epoch_difference(partition, logs, hw, isr)) is not None:
        rows.append(epochs)
    return rows


def _held(wide: pd.DataFrame, logs: pd.DataFrame, offset: int) -> list[str]:
    """What each replica held at `offset`, in words."""
    out = []
    for r in logs.itertuples():
        sig = wide.at[offset, int(r.broker)]
        role = "leader" if r.leader else ("in the ISR" if r.in_isr else "outside the ISR")
        if sig is None:
            what = "below its log start"
        elif sig == ABSENT:
            what = f"lacks it (log end {r.log_end_offset})"
        else:
            d, le, pid, pe, seq, ctl, crc = sig.split("|")
            what = f"leader epoch {le}, producer {pid} epoch {pe} sequence {seq}, digest {d}" + \
                (", a control record" if ctl == "True" else "") + (", its batch's CRC fails" if crc == "False" else "")
        out.append(f"broker {int(r.broker)} ({role}): {what}")
    return out


def _checkpoints(logs: pd.DataFrame) -> str:
    parts = []
    for r in logs.itertuples():
        ep = r.epochs if r.epochs is not None else None
        text = "none" if ep is None else ", ".join(f"{e}@{o}" for e, o in zip(ep, r.epoch_start_offsets))
        parts.append(f"broker {int(r.broker)} [{text}]")
    return "; ".join(parts)


def _row(kind: str, partition: int, part, wide, logs, hw, first: int, last: int, n: int, isr: list[int]) -> dict:
    span = f"offset {first}" if n == 1 else f"offsets {first}..{last} ({n} offsets)"
    held = _held(wide, logs, first)
    distinct = {wide.at[first, int(b)] for b in logs["broker"]} - {None}
    if kind == DIVERGENCE:
        why = (f"replicas in the ISR {sorted(isr)} of partition {partition} differ at {span}, below its high "
               f"watermark {hw}: Kafka keeps ISR members identical below the high watermark")
    else:
        where = "at or above" if hw is not None and first >= hw else "below"
        why = (f"replicas of partition {partition} differ at {span} ({where} its high watermark {hw}, or on a "
               f"replica outside the ISR {sorted(isr)}): reported, not judged")
    reason = f"{why}; at {first}: " + "; ".join(held) + "; leader-epoch checkpoints: " + _checkpoints(logs)
    return {"kind": kind, "partition": partition, "offset": first, "value": _value_at(part, logs, first),
            "multiplicity": len(distinct), "reason": reason,
            "classification": "violation" if kind == DIVERGENCE else "allowed", **NO_CLAIM}


def _value_at(part: pd.DataFrame, logs: pd.DataFrame, offset: int) -> str | None:
    """The record's value at `offset` on the leader (else on the first replica that holds it)."""
    at = part[part["offset"] == offset]
    leaders = set(logs.loc[logs["leader"].astype(bool), "broker"])
    at = pd.concat([at[at["broker"].isin(leaders)], at])
    return None if not len(at) or pd.isna(at["value"].iloc[0]) else str(at["value"].iloc[0])


def _epoch_difference(partition: int, logs: pd.DataFrame, hw: int | None, isr: list[int]) -> dict | None:
    """A replica_difference row where ISR members' leader-epoch checkpoints differ below the high watermark."""
    seen = {}
    for r in logs.itertuples():
        if int(r.broker) in isr and r.epochs is not None:
            seen[int(r.broker)] = tuple((int(e), int(o)) for e, o in zip(r.epochs, r.epoch_start_offsets)
                                        if hw is None or o < hw)
    if len(set(seen.values())) <= 1:
        return None
    return {"kind": DIFFERENCE, "partition": partition, "offset": None, "value": None,
            "multiplicity": len(set(seen.values())), "classification": "allowed", **NO_CLAIM,
            "reason": f"the leader-epoch checkpoints of partition {partition}'s ISR members differ below the high "
                      f"watermark {hw} (a leader assigns its epoch on election even if it appends nothing): "
                      + _checkpoints(logs[logs["broker"].isin(list(seen))]) + "; reported, not judged"}


def _unread(partition: int, r) -> dict:
    return {"kind": DIFFERENCE, "partition": partition, "offset": None, "value": None, "multiplicity": None,
            "classification": "allowed", **NO_CLAIM,
            "reason": f"broker {int(r.broker)}'s replica of partition {partition} was not audited: {r.error}"}


def status(run_dir: Path | str, meta_audit: dict | None, judged: pd.DataFrame) -> dict:
    """verdict.json's `replica_audit`: whether the audit ran (its files present), and what it found."""
    if not (Path(run_dir) / "history/replica_logs.parquet").exists():
        why = (meta_audit or {}).get("error") or "the run has no replica audit (history/replica_logs.parquet absent)"
        return {"ran": False, "why": why}
    kinds = judged["kind"] if len(judged) else pd.Series([], dtype=object)
    return {"ran": True, "isr_whole": (meta_audit or {}).get("isr_whole"),
            "divergences": int((kinds == DIVERGENCE).sum()), "differences": int((kinds == DIFFERENCE).sum())}
