"""A stuck last stable offset (`lso_stuck`, history/lso.parquet).

A partition's last stable offset (LSO) is the first offset of its oldest open transaction, or its high watermark
when none is open; read_committed consumers read only below it (KIP-98; Log.lastStableOffset). A transaction stays
open at most transaction.timeout.ms: then its coordinator aborts it and writes the ABORT marker
(TransactionCoordinator.abortTimedOutTransactions), and the LSO moves on. So once every fault has healed, a
partition whose LSO stays at one value below its high watermark for longer than transaction.timeout.ms has a
transaction nothing will end: its readers are stuck (KAFKA-20716: an unclean election that dropped the marker).

One instance per stuck stretch: consecutive samples of the partition with the same LSO, below the HW at each, whose
part after the last heal (the run's faults; a fault never healed leaves nothing to judge) and after the transaction
log's ISR is back (`transaction_log_back`) lasts longer than the coordinator's bound on an open transaction:
transaction.timeout.ms plus its abort interval (it looks for timed out transactions every
transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s) plus the markers' write
(history.eos.abort_bound_ms; rule `timed_out_transactions_aborted`). The stretch's start is no earlier than the
transaction's, so a stretch longer than the bound is one the coordinator did not end. (Measured against the timeout
alone, a processor stopped mid-transaction at the run's end, whose abort came 34 s after it began with a 20 s
timeout, was judged stuck: a real run, checked in tests/checkers/test_lso.py.)

The abort is a write to `__transaction_state` with requiredAcks = -1 (TransactionStateManager.appendTransactionToLog,
TransactionLog.EnforcedRequiredAcks; 3.9 and 4.x alike): below transaction.state.log.min.isr it fails with
NOT_ENOUGH_REPLICAS, the coordinator answers COORDINATOR_NOT_AVAILABLE, clears the pending transition and the next
abort pass tries again (TransactionCoordinator.abortTimedOutTransactions / onEndTransactionComplete). So with two of
three brokers killed and restarted the bound starts once the log's ISR is back, not at the heal request. The
markers too are appended with requiredAcks = -1 (KafkaApis.handleWriteTxnMarkersRequest) and resent while the
partition is below its min.insync.replicas (TransactionMarkerRequestCompletionHandler), so the bound starts no
earlier than the partition's own ISR back (`markers_writable`).

Always a violation; the reason names the open transaction's producer when the brokers named it to the final drain
(DescribeProducers, meta.json `drain.stuck`; 3.0+: `describe_producers`), how this release lets a transaction hang
(checkers/model/releases.py `transaction_rules`: KIP-890 parts 1 and 2), and a predicted unclean election or power
loss on the partition when there is one (the shape of KAFKA-20716, still a bug: an election may lose records, never
leave a partition unreadable): the row carries that loss's cause (excuses.loss_claim over the span of the stuck
transaction's records, Claim.columns()), yet stays a violation.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kafka_chaos.checkers.excuses import NO_CLAIM, loss_claim
from kafka_chaos.checkers.instances import rows_frame
from kafka_chaos.checkers.model.releases import TransactionRules
from kafka_chaos.history.eos import abort_bound_ms

LSO_FILE = "history/lso.parquet"
DEFAULT_TIMEOUT_MS = 60000          # librdkafka's and the Java client's transaction.timeout.ms
COLUMNS = ["kind", "partition", "offset", "t_invoke_ns", "t_complete_ns", "classification", "reason",
           *NO_CLAIM]
# The harness's __transaction_state settings (cluster/config.py broker_properties): replication factor min(3,
# brokers), transaction.state.log.min.isr min(2, that); a --broker-config entry in meta.json's broker_settings wins.
TXN_LOG_RF, TXN_LOG_MIN_ISR = "transaction.state.log.replication.factor", "transaction.state.log.min.isr"


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


@dataclass(frozen=True)
class LogBack:
    """When the coordinator's __transaction_state partition had transaction.state.log.min.isr replicas alive and
    caught up again, as far as the history shows (t_ns None: it never shows that); `what` says so in the reason."""

    t_ns: int | None
    what: str


def log_isr_needed(brokers: int, settings: dict) -> int:
    """How many of the cluster's brokers must be back for the transaction log's ISR to reach its min.isr whichever
    brokers hold the coordinator's partition: min.isr of its replicas, plus the brokers that may not be replicas."""
    rf = int(settings.get(TXN_LOG_RF) or min(3, brokers))
    min_isr = int(settings.get(TXN_LOG_MIN_ISR) or min(2, rf))
    return min(brokers, min_isr + max(0, brokers - rf))


def transaction_log_back(run_dir: Path | str, meta, model=None) -> LogBack | None:
    """When the transaction log's ISR was back (None: never below it, as far as the faults go). A broker a fault
    touched counts from when it is seen in a test-topic partition's ISR at or after its last heal (cluster.parquet;
    without samples the model's ISR events): a replica rejoins an ISR once it has caught up with the leader
    (Partition.maybeExpandIsr), which the small __transaction_state partition does no later than a fetching replica
    of the test topic's does. A broker no fault touched counts throughout."""
    brokers = list(meta.brokers) or list(range(1, meta.replication_factor + 1))
    healed = broker_heals(Path(run_dir), set(brokers))
    if not healed:
        return None
    needed = log_isr_needed(len(brokers), meta.broker_settings or {})
    if len(brokers) - len(healed) >= needed:
        return None
    samples = read_isr_samples(Path(run_dir))
    back = {b: in_isr_since(samples, model, b, t) for b, t in healed.items()}
    known = sorted(t for t in back.values() if t is not None)
    short = needed - (len(brokers) - len(healed))
    named = ", ".join(str(b) for b, t in sorted(back.items()) if t is not None)
    if len(known) < short:
        return LogBack(None, f"the transaction log's ISR never back to {needed} of {len(brokers)} brokers")
    return LogBack(known[short - 1], f"the transaction log's ISR was back ({needed} of {len(brokers)} brokers in an "
                                     f"ISR again, of them {named}, at t={known[short - 1]})")


def broker_heals(run_dir: Path, brokers: set[int]) -> dict[int, int | None]:
    """Broker -> the last heal of a fault that named it (None: none healed it)."""
    path = run_dir / "history/faults.parquet"
    if not path.exists():
        return {}
    out: dict[int, int | None] = {}
    for f in pd.read_parquet(path, columns=["t_ns", "action", "nodes"]).itertuples(index=False):
        for n in set(int(x) for x in (f.nodes if f.nodes is not None else ())) & brokers:
            last = out.get(n)
            out[n] = max(last or 0, int(f.t_ns)) if f.action == "heal" else last
    return out


def read_isr_samples(run_dir: Path) -> pd.DataFrame | None:
    path = run_dir / "history/cluster.parquet"
    return pd.read_parquet(path, columns=["t_ns", "partition", "isr"]) if path.exists() else None


def in_isr_since(samples: pd.DataFrame | None, model, broker: int, since: int | None) -> int | None:
    """The first time at or after `since` that the samples (or, with none, the model's events) show `broker` in
    an ISR of the test topic."""
    if since is None:
        return None
    if samples is not None and len(samples):
        later = samples[samples["t_ns"] >= since]
        hit = later["t_ns"][later["isr"].map(lambda isr: isr is not None and broker in list(isr))]
        return int(hit.min()) if len(hit) else None
    return in_model_isr_since(model, broker, since)


def in_model_isr_since(model, broker: int, since: int) -> int | None:
    """The same from the model's ISR events: in an ISR already at `since`, or the first later ISR with it. A
    partition with no ISR change by then has its first ISR, taken as the configured brokers (exact when every
    broker is a replica, as with three brokers and replication factor 3)."""
    if model is None:
        return None
    first = set(model.config.brokers or range(1, model.config.replication_factor + 1))
    isr = {p: first for p in range(model.config.partitions)}
    later = []
    for e in sorted((e for e in model.events if e.get("event") == "isr"), key=lambda e: e["t_ns"]):
        if e["t_ns"] <= since:
            isr[e["partition"]] = set(e["isr"])
        elif broker in e["isr"]:
            later.append(int(e["t_ns"]))
    return since if any(broker in members for members in isr.values()) else min(later, default=None)


def timeout_ms(extra: dict) -> int:
    eos = extra.get("eos") or {}
    return int(eos.get("transaction_timeout_ms") or DEFAULT_TIMEOUT_MS)


def find(samples: pd.DataFrame, healed_ns: int | None, timeout: int, model=None, stuck: dict | None = None,
         rules: TransactionRules | None = None, txn_ids: dict[int, str] | None = None,
         log_back: LogBack | None = None, markers: dict[int, int | None] | None = None) -> pd.DataFrame:
    """Judged `lso_stuck` rows from lso.parquet's samples. stuck: meta.json's drain.stuck (partition -> where the
    drain rested and the open transactions the brokers named); rules: the run's transaction rules; txn_ids: producer
    id -> transactional.id, from the coordinators' logs (history.controller_log.transactional_ids); log_back: when
    the transaction log's ISR was back (transaction_log_back; None: never below it); markers: partition -> when its
    ISR could take the markers again (markers_writable; None: no samples say)."""
    rows = []
    s = with_drain(samples, stuck).dropna(subset=["last_stable_offset", "high_watermark"]) \
        .sort_values(["partition", "t_ns"], kind="stable")
    start, since = bound_start(healed_ns, log_back)
    if start is None or not len(s):
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
        p, at = int(g["p"].iloc[0]), int(g["lso"].iloc[0])
        p_start, p_since = partition_start(p, start, since, markers)
        after = b - max(a, p_start if p_start is not None else b)
        if p_start is None or after <= bound * 1e6:
            continue
        loss = loss_claim(model, p, first_written(part, t, hw, p, at, a), b)
        why = who_holds(p, at, stuck, rules, txn_ids)
        why += f"; the model predicts {loss.cause.what} ({loss.cause.id}) over the span of its records (the shape " \
               f"of KAFKA-20716)" if loss else ""
        rows.append({"kind": "lso_stuck", "partition": p, "offset": at, "t_invoke_ns": a, "t_complete_ns": b,
                     "classification": "violation", **(loss.columns() if loss else NO_CLAIM),
                     "reason": f"partition {p}'s last stable offset stayed at {at}, below the high watermark (up to "
                               f"{int(g['hw'].max())}), for {(b - a) / 1e9:.1f} s, {after / 1e9:.1f} s of it after "
                               f"{p_since}: longer than transaction.timeout.ms ({timeout} ms) plus the "
                               f"coordinator's abort interval and marker write ({bound} ms in all), by which an open "
                               f"transaction its coordinator knows is aborted{why}"
                               + (f"; {rules.hanging()}" if rules else "")})
    return rows_frame(rows, COLUMNS)


def bound_start(healed_ns: int | None, log_back: LogBack | None) -> tuple[int | None, str]:
    """When the coordinator's bound starts (the later of the last heal and the transaction log's ISR back; None:
    either never happened) and that moment in words, for the reason."""
    if log_back is None or healed_ns is None:
        return healed_ns, "every fault had healed"
    if log_back.t_ns is None:
        return None, log_back.what
    if log_back.t_ns <= healed_ns:
        return healed_ns, "every fault had healed"
    return log_back.t_ns, f"every fault had healed and {log_back.what}"


def partition_start(p: int, start: int, since: str, markers: dict[int, int | None] | None
                    ) -> tuple[int | None, str]:
    """The bound's start for partition p: `start`, or later when its own ISR could take the markers only then
    (None: never, as far as the samples show)."""
    if markers is None or p not in markers:
        return start, since
    m = markers[p]
    if m is None:
        return None, since
    if m <= start:
        return start, since
    return m, f"{since} and its ISR had min.insync.replicas members again (t={m}), as the markers' write needs"


def markers_writable(run_dir: Path | str, min_isr: int, healed_ns: int | None) -> dict[int, int | None] | None:
    """Partition -> the first cluster.parquet sample at or after the last heal whose ISR had the topic's
    min.insync.replicas members (None: none did); None without samples. The coordinator's markers are appended with
    requiredAcks = -1 (KafkaApis.handleWriteTxnMarkersRequest), refused below min.insync.replicas
    (Partition.appendRecordsToLeader) and resent (TransactionMarkerRequestCompletionHandler: NOT_ENOUGH_REPLICAS)."""
    samples = read_isr_samples(Path(run_dir))
    if samples is None or not len(samples) or healed_ns is None:
        return None
    later = samples[samples["t_ns"] >= healed_ns]
    ok = later["isr"].map(lambda isr: isr is not None and len(isr) >= min_isr)
    first = later[ok].groupby("partition")["t_ns"].min()
    return {int(p): (int(first[p]) if p in first.index else None) for p in samples["partition"].unique()}


def first_written(part: np.ndarray, t: np.ndarray, hw: np.ndarray, p: int, at: int, a: int) -> int:
    """The earliest the stuck transaction's first record (offset `at`) can have been appended: the last sample of
    the partition before the stretch whose high watermark was not yet past it; the stretch's start when no sample
    shows that (the span of its records then starts where the history first shows it)."""
    before = (part == p) & (t < a) & (hw <= at)
    return int(t[before].max()) if before.any() else a


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
