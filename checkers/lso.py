"""A stuck last stable offset (`lso_stuck`, history/lso.parquet).

A partition's last stable offset (LSO) is the first offset of its oldest open transaction, or its high watermark
when none is open; read_committed consumers read only below it (KIP-98; Log.lastStableOffset). A transaction stays
open at most transaction.timeout.ms: then its coordinator aborts it and writes the ABORT marker
(TransactionCoordinator.abortTimedOutTransactions), and the LSO moves on. So once every fault has healed, a
partition whose LSO stays at one value below its high watermark for longer than transaction.timeout.ms has a
transaction nothing will end: its readers are stuck (KAFKA-20716: an unclean election that dropped the marker).

One instance per stuck stretch: consecutive samples of the partition with the same LSO, below the HW at each,
whose part after the last heal (the run's faults; a fault never healed leaves nothing to judge) lasts longer than
the coordinator's bound on an open transaction: transaction.timeout.ms plus its abort interval (it looks for timed
out transactions every transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s) plus the markers' write
(history.eos.abort_bound_ms; rule `timed_out_transactions_aborted`). The stretch's start is no earlier than the
transaction's, so a stretch longer than the bound is one the coordinator did not end. (Measured against the timeout
alone, a processor stopped mid-transaction at the run's end, whose abort came 34 s after it began with a 20 s
timeout, was judged stuck: a real run, checked in tests/checkers/test_lso.py.)

Always a violation; the reason names the open transaction's producer when the brokers named it to the final drain
(DescribeProducers, meta.json `drain.stuck`; 3.0+: `describe_producers`), how this release lets a transaction hang
(checkers/model/releases.py `transaction_rules`: KIP-890 parts 1 and 2), and a predicted unclean election or power
loss on the partition when there is one (the shape of KAFKA-20716, still a bug: an election may lose records, never
leave a partition unreadable).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kafka_chaos.checkers.groups import destructive_cause
from kafka_chaos.checkers.instances import rows_frame
from kafka_chaos.checkers.model.releases import TransactionRules
from kafka_chaos.history.eos import abort_bound_ms

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


def find(samples: pd.DataFrame, healed_ns: int | None, timeout: int, model=None, stuck: dict | None = None,
         rules: TransactionRules | None = None, txn_ids: dict[int, str] | None = None) -> pd.DataFrame:
    """Judged `lso_stuck` rows from lso.parquet's samples. stuck: meta.json's drain.stuck (partition -> where the
    drain rested and the open transactions the brokers named); rules: the run's transaction rules; txn_ids: producer
    id -> transactional.id, from the coordinators' logs (history.controller_log.transactional_ids)."""
    rows = []
    s = with_drain(samples, stuck).dropna(subset=["last_stable_offset", "high_watermark"]) \
        .sort_values(["partition", "t_ns"], kind="stable")
    if healed_ns is None or not len(s):
        return rows_frame(rows, COLUMNS)
    bound = abort_bound_ms(timeout)
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
        if after <= bound * 1e6:
            continue
        p, at = int(g["p"].iloc[0]), int(g["lso"].iloc[0])
        cause = destructive_cause(model, p)
        why = who_holds(p, at, stuck, rules, txn_ids)
        why += f"; the model predicts {cause} on it (the shape of KAFKA-20716)" if cause else ""
        rows.append({"kind": "lso_stuck", "partition": p, "offset": at, "t_invoke_ns": a, "t_complete_ns": b,
                     "classification": "violation",
                     "reason": f"partition {p}'s last stable offset stayed at {at}, below the high watermark (up to "
                               f"{int(g['hw'].max())}), for {(b - a) / 1e9:.1f} s, {after / 1e9:.1f} s of it after "
                               f"every fault had healed: longer than transaction.timeout.ms ({timeout} ms) plus the "
                               f"coordinator's abort interval and marker write ({bound} ms in all), by which an open "
                               f"transaction its coordinator knows is aborted{why}"
                               + (f"; {rules.hanging()}" if rules else "")})
    return rows_frame(rows, COLUMNS)


def with_drain(samples: pd.DataFrame, stuck: dict | None) -> pd.DataFrame:
    """The samples, plus where the final drain rested (meta.json drain.stuck: its LSO and high watermark from
    since_ns to until_ns) as two more samples of each such partition. The drain starts once every fault has healed,
    and with no fault a partition's LSO does not go back (only a truncation, i.e. an unclean election, moves it
    down), so a drain resting at the LSO the last samples showed extends that stretch to when the drain gave up:
    the sampler stops with the workload, the drain waits on (a real cascade-kill run: samples 28.5 s after the heal,
    the drain's rest 130 s)."""
    extra = [{"t_ns": int(e[k]), "partition": int(p), "high_watermark": int(e["hw"]),
              "last_stable_offset": int(e["lso"])}
             for p, e in (stuck or {}).items() for k in ("since_ns", "until_ns") if e.get(k) is not None]
    if not extra:
        return samples
    return pd.concat([samples, pd.DataFrame(extra).astype({"high_watermark": "float64"})], ignore_index=True)


def who_holds(partition: int, lso: int, stuck: dict | None, rules: TransactionRules | None,
              txn_ids: dict[int, str] | None = None) -> str:
    """'; held by producer id N ...' from the open transactions the brokers named to the final drain."""
    if rules is not None and not rules.names_producer:
        return f"; Kafka {rules.version} cannot name the open transaction's producer (DescribeProducers: 3.0+)"
    entry = (stuck or {}).get(str(partition), (stuck or {}).get(partition))
    if not entry:
        return "; the final drain did not rest there, so the brokers were not asked who holds it"
    named = [o for o in entry.get("open") or [] if "producer_id" in o]
    here = [o for o in named if o.get("start_offset") == lso] or named
    if not here:
        errors = [o["error"] for o in entry.get("open") or [] if "error" in o]
        return "; the brokers named no open transaction" + (f" ({errors[0]})" if errors else "")
    named_as = {o["producer_id"]: f", transactional.id {txn_ids[o['producer_id']]}" for o in here
                if o["producer_id"] in (txn_ids or {})}
    return "; held by " + ", ".join(f"producer id {o['producer_id']} (epoch {o['producer_epoch']}"
                                    f"{named_as.get(o['producer_id'], '')}), whose transaction the leader has open "
                                    f"from offset {o['start_offset']}" for o in here)
