"""The kinds a workload's own history files add to a run's judged rows: the consumer group's (checkers/groups.py,
group.parquet), the transactional producer's (checkers/txns.py, txns.parquet), the exactly-once processors'
(checkers/eos.py, eos.parquet), the stuck last stable offset (checkers/lso.py, lso.parquet) and the replica
audit's (checkers/replica_audit.py, replicas.parquet)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from kafka_chaos.checkers import eos, groups, lso, replica_audit, txns
from kafka_chaos.checkers.judge import poll_skips
from kafka_chaos.checkers.model.releases import transaction_rules
from kafka_chaos.history.controller_log import transaction_version, transactional_ids
from kafka_chaos.history.meta import RunMeta


def with_workload_kinds(run_dir: Path, judged: pd.DataFrame, meta: RunMeta, model, complete) -> pd.DataFrame:
    """The judged rows plus those of every workload file the history holds."""
    group, txn_rows, eos_rows = groups.read_group(run_dir), txns.read_txns(run_dir), eos.read_eos(run_dir)
    samples, audit = lso.read_lso(run_dir), replica_audit.read(run_dir)
    if group is None and txn_rows is None and eos_rows is None and samples is None:
        return _joined(judged, [replica_audit.find(*audit)] if audit is not None else [])
    reads = pd.read_parquet(run_dir / "history/reads.parquet",
                            columns=["consumer", "seq", "phase", "partition", "offset", "value", "t_ns"])
    extra = []
    if group is not None:
        if meta.consumer_mode == "subscribe":
            judged = poll_skips.rejudge(judged, group, reads)
        extra.append(groups.find(group, reads, model, groups.read_kills(run_dir), meta.extra.get("consumer_commit"),
                                  run_dir / "history/sends.parquet"))
    if txn_rows is not None:
        final = set(reads.loc[reads["phase"] == "final", "value"])
        extra.append(txns.find(txn_rows, final, meta.partitions, complete.incomplete, model))
        extra.append(txns.out_of_order(txn_rows, reads[reads["phase"] == "final"], complete.incomplete))
    if eos_rows is not None:
        extra.append(eos.find(eos_rows, reads, meta.extra.get("eos") or {}, model, complete.incomplete))
    if samples is not None:
        rules = transaction_rules(meta.kafka_version, meta.metadata_mode, transaction_version(run_dir))
        extra.append(lso.find(samples, lso.heals(run_dir), lso.timeout_ms(meta.extra), model,
                              (meta.drain or {}).get("stuck"), rules, transactional_ids(run_dir),
                              lso.transaction_log_back(run_dir, meta, model),
                              lso.markers_writable(run_dir, meta.min_insync_replicas, lso.heals(run_dir))))
    if audit is not None:
        extra.append(replica_audit.find(*audit))
    return _joined(judged, extra)


def _joined(judged: pd.DataFrame, extra: list[pd.DataFrame]) -> pd.DataFrame:
    parts = [f.dropna(axis=1, how="all") for f in [judged, *extra] if len(f)]
    if not parts:
        return judged
    columns = list(dict.fromkeys([c for f in [judged, *extra] for c in f.columns]))
    return pd.concat(parts, ignore_index=True).reindex(columns=columns)
