"""A stuck last stable offset (`lso_stuck`, history/lso.parquet).

A partition's last stable offset (LSO) is the first offset of its oldest open transaction, or its high watermark
when none is open; read_committed consumers read only below it (KIP-98; Log.lastStableOffset). A transaction stays
open at most transaction.timeout.ms: then its coordinator aborts it and writes the ABORT marker
(TransactionCoordinator.abortTimedOutTransactions), and the LSO moves on. So once every fault has healed, a
partition whose LSO stays at one value below its high watermark for longer than transaction.timeout.ms has a
transaction nothing will end: its readers are stuck (KAFKA-20716: an unclean election that dropped the marker).

One instance per stuck stretch: consecutive samples of the partition with the same LSO, below the HW at each,
whose part after the last heal (the run's faults; a fault never healed leaves nothing to judge) lasts longer
than the timeout. Always a violation; the reason names a predicted unclean election or power loss on the partition
when there is one (the shape of KAFKA-20716, still a bug: an election may lose records, never leave a partition
unreadable).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kafka_chaos.checkers.groups import destructive_cause
from kafka_chaos.checkers.instances import rows_frame

LSO_FILE = "history/lso.parquet"
DEFAULT_TIMEOUT_MS = 60000          # librdkafka's and the Java client's transaction.timeout.ms
COLUMNS = ["kind", "partition", "offset", "t_invoke_ns", "t_complete_ns", "classification", "reason"]


def read_lso(run_dir: Path | str) -> pd.DataFrame | None:
    path = Path(run_dir) / LSO_FILE
    return pd.read_parquet(path) if path.exists() else None


def heals(run_dir: Path | str) -> int | None:
    """When the last fault healed (0: no faults); None when one never healed."""
    path = Path(run_dir) / "history/faults.parquet"
    if not path.exists():
        return 0
    f = pd.read_parquet(path, columns=["t_ns", "action", "fault", "details"])
    return healed_at(f)


def healed_at(faults: pd.DataFrame) -> int | None:
    if not len(faults):
        return 0
    starts = faults[faults["action"] == "start"]
    ends = faults[faults["action"] == "heal"]
    if len(ends) < len(starts):
        return None
    return int(ends["t_ns"].max())


def timeout_ms(extra: dict) -> int:
    eos = extra.get("eos") or {}
    return int(eos.get("transaction_timeout_ms") or DEFAULT_TIMEOUT_MS)


def find(samples: pd.DataFrame, healed_ns: int | None, timeout: int, model=None) -> pd.DataFrame:
    """Judged `lso_stuck` rows from lso.parquet's samples."""
    rows = []
    s = samples.dropna(subset=["last_stable_offset", "high_watermark"]).sort_values(["partition", "t_ns"])
    if healed_ns is None or not len(s):
        return rows_frame(rows, COLUMNS)
    lso, hw = s["last_stable_offset"].to_numpy(np.int64), s["high_watermark"].to_numpy(np.int64)
    part, t = s["partition"].to_numpy(np.int64), s["t_ns"].to_numpy(np.int64)
    behind = lso < hw
    # a stretch: consecutive samples of one partition, behind, with one LSO
    new = np.ones(len(s), dtype=bool)
    new[1:] = (part[1:] != part[:-1]) | (lso[1:] != lso[:-1]) | ~behind[:-1]
    stretch = np.cumsum(new)
    frame = pd.DataFrame({"stretch": stretch, "p": part, "lso": lso, "hw": hw, "t": t})[behind]
    for _, g in frame.groupby("stretch"):
        a, b = int(g["t"].iloc[0]), int(g["t"].iloc[-1])
        after = b - max(a, healed_ns)
        if after <= timeout * 1e6:
            continue
        p, at = int(g["p"].iloc[0]), int(g["lso"].iloc[0])
        cause = destructive_cause(model, p)
        why = f"; the model predicts {cause} on it (the shape of KAFKA-20716)" if cause else ""
        rows.append({"kind": "lso_stuck", "partition": p, "offset": at, "t_invoke_ns": a, "t_complete_ns": b,
                     "classification": "violation",
                     "reason": f"partition {p}'s last stable offset stayed at {at}, below the high watermark (up to "
                               f"{int(g['hw'].max())}), for {(b - a) / 1e9:.1f} s, {after / 1e9:.1f} s of it after "
                               f"every fault had healed: longer than transaction.timeout.ms ({timeout} ms), after "
                               f"which the coordinator aborts an open transaction{why}"})
    return rows_frame(rows, COLUMNS)
