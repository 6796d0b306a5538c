"""Exactly-once processing (`--workload eos`, history/eos.parquet): every input record's output exactly once, in
order, with the offsets committed beside it; and the dependency-graph anomalies Jepsen's Kafka workload names.

What Kafka promises a consume-transform-produce loop that commits its offsets in its transaction (KIP-98, KIP-447;
`sendOffsetsToTransaction` with the consumer's group metadata): the outputs and the offsets commit or abort
together, a read_committed reader sees a transaction's outputs only once its commit marker is written and never an
aborted one's, and the group coordinator takes an offset commit only from the current generation (a zombie's
transaction is fenced). So, per input record below the group's final committed offset of its partition, exactly
one committed output in the final drain (`eos_lost`, `eos_duplicate`); per partition, the outputs in the order of
their inputs (`eos_out_of_order`); no offset committed ahead of the output written (`eos_offset_ahead`) and no output
committed beyond the group's final offsets (`eos_offset_behind`).

The graph (checkers/eos_graph.py): nodes are the committed transactions (and those whose outcome the processor did
not know); keys are each input partition's group offset (versions: the offsets committed) and each output partition
(versions: the final drain's order). ww: the next version of a key; wr: a transaction's first read of an input
partition starts at the version another committed. G0 and G1c are cycles; G1a an aborted transaction's output read,
or a transaction that started at an offset only an aborted transaction committed; `internal` a transaction whose own
reads of a partition are not consecutive or whose writes to one are not increasing (Jepsen's int-poll-skip,
int-nonmonotonic-poll, int-nonmonotonic-send: the input has no gaps, being written by one idempotent producer);
`precommitted_read` a read of a transaction's output, or a start at the offset it committed by another processor,
before that transaction called commit.

Each is excused only by a loss event the ISR model predicts (an unclean election or a power loss) whose loss window
on a partition involved holds what the transactions involved appended: their records, offsets and markers, from
their begin to the markers' deadline after their end (excuses.LOSS_EVENT, ModelResult.markers_written_by). A lost
output's transaction's COMMIT marker and an aborted output's ABORT marker have rules of their own (checkers/txns.py:
COMMIT_MARKER_LOST for `eos_lost`, ABORT_MARKER_LOST for `g1a`), and a second committed copy needs the loss between
the first copy's begin and the second's end (REPROCESSED_AFTER_LOSS). A loss at another time removed other records.
(The input topic has the output topic's replicas and settings and the same faults, so the model's partition p
stands for both.)
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kafka_chaos.checkers import excuses
from kafka_chaos.checkers.eos_graph import WR, WW, describe, find_cycles
from kafka_chaos.checkers.excuses import NO_CLAIM, Cause, Times
from kafka_chaos.checkers.instances import rows_frame
from kafka_chaos.checkers.txns import ABORT_MARKER_LOST, CLAIM_COLUMNS, COMMIT_MARKER_LOST, marker_claims, window_cause
from kafka_chaos.history import kinds
from kafka_chaos.history.eos import EOS_FILE

EOS_KINDS = kinds.judged_by(kinds.EOS)       # declared in history/kinds.py
OUT_RE = r"^(?P<in_p>\d+)-(?P<in_o>\d+)-[0-9a-f]{8}@(?P<processor>.+)\.(?P<txn>\d+)$"
COLUMNS = ["kind", "partition", "offset", "value", "producer", "consumer", "t_complete_ns", "t_read_ns",
           "classification", "reason", *CLAIM_COLUMNS]
LIVE_KEY = 1 << 40          # (partition, offset) as one int64: partition * LIVE_KEY + offset


def _between_the_copies(cause: Cause, times: Times) -> bool:
    """The loss came after the first copy's transaction began and before the second copy's ended."""
    return (times.committed is None or cause.t_ns >= times.committed) and \
        (times.answered is None or cause.t_ns <= times.answered)


REPROCESSED_AFTER_LOSS = excuses.rule(
    "eos.reprocessed_after_loss", ("eos_duplicate",),
    "a loss event (an unclean election, PartitionChangeBuilder.electLeader outside the ISR/ELR, or a power loss that "
    "cut the elected log; UnifiedLog.truncateTo) removed the input the first copy read, or its transaction's outputs, "
    "offsets or markers: the group fetches from an offset the log no longer holds or has again "
    "(auto.offset.reset on OFFSET_OUT_OF_RANGE) and a later transaction processes the input again",
    "the loss window holds something appended before the first copy's markers' deadline, and the event came "
    "after the first copy's transaction began and before the second copy's ended", _between_the_copies)


def member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """values in sorted_set (sorted, unique), by binary search: no hash table per call."""
    if not len(sorted_set):
        return np.zeros(len(values), dtype=bool)
    i = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[i] == values


def read_eos(run_dir: Path | str) -> pd.DataFrame | None:
    path = Path(run_dir) / EOS_FILE
    return pd.read_parquet(path) if path.exists() else None


def outputs(reads: pd.DataFrame, txns: pd.DataFrame) -> pd.DataFrame:
    """The reads of outputs, each with its input (in_p, in_o), the transaction that wrote it (`id`, -1: one the
    processor never journaled, killed first) and that transaction's outcome (`open` for those)."""
    m = pc.extract_regex(pa.array(reads["value"].to_numpy(), pa.string()), OUT_RE)    # RE2, in C++
    ok = pc.is_valid(m).to_numpy(zero_copy_only=False)
    out = reads[ok].assign(**{c: pc.drop_null(m).field(c).to_numpy(zero_copy_only=False) for c in
                              ("in_p", "in_o", "processor", "txn")})
    out = out.astype({"in_p": "int64", "in_o": "int64", "txn": "int64"})
    keyed = txns[["processor", "txn", "outcome", "t_commit_ns"]].assign(id=np.arange(len(txns)))
    out = out.merge(keyed, on=["processor", "txn"], how="left")
    return out.assign(id=out["id"].fillna(-1).astype("int64"), outcome=out["outcome"].fillna("open"))


class EosCheck:
    def __init__(self, txns: pd.DataFrame, reads: pd.DataFrame, eos_meta: dict, model=None, incomplete=()):
        self.txns = txns.reset_index(drop=True)
        self.model, self.incomplete, self.meta = model, set(incomplete), eos_meta
        outs = outputs(reads, self.txns)
        self.final = outs[outs["phase"] == "final"]
        self.live = outs[outs["phase"] != "final"]
        self.kept = self.final[(self.final["outcome"] != "aborted") & ~self.final["in_p"].isin(list(self.incomplete))]
        self.committed = self.txns["outcome"] == "committed"
        self.rows: list[dict] = []
        self._lists: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def pairs(self, mask, a: str, b: str, extra: tuple[str, ...] = ()) -> pd.DataFrame:
        """The aligned list columns a and b of the transactions in `mask`, one row per element: id, a, b (-1 for
        a null element) and the transactions' `extra` columns. Flattened through Arrow once per column, not
        exploded row by row."""
        for col in (a, b):
            if col not in self._lists:
                arr = pa.array(self.txns[col].tolist(), from_pandas=True)     # read back: NaN for nulls
                arr = arr if arr.type == pa.list_(pa.int64()) else arr.cast(pa.list_(pa.int64()))
                self._lists[col] = (pc.list_parent_indices(arr).to_numpy(),
                                    pc.fill_null(pc.list_flatten(arr), -1).to_numpy())
        ids, va = self._lists[a]
        vb = self._lists[b][1]
        keep = np.asarray(mask)[ids] if len(ids) else np.zeros(0, dtype=bool)
        out = pd.DataFrame({"id": ids[keep], a: va[keep], b: vb[keep]})
        for c in extra:
            out[c] = self.txns[c].to_numpy()[out["id"].to_numpy()]
        return out

    # ---- helpers ---------------------------------------------------------------------------------------------
    def _name(self, i: int) -> str:
        return f"{self.txns.at[i, 'processor']}.{self.txns.at[i, 'txn']}" if i >= 0 else "an unjournaled transaction"

    def _add(self, kind: str, what: str, claim: excuses.Claim | None, **cols) -> None:
        cls, why = ("allowed", f"; {claim.reason()}") if claim else ("violation", "")
        self.rows.append({"kind": kind, "classification": cls, "reason": what + why} | cols |
                         (claim.columns() if claim else NO_CLAIM))

    def _at(self, col: str, ids) -> np.ndarray:
        known = [int(i) for i in ids if int(i) >= 0]
        return self.txns[col].to_numpy()[known].astype(np.int64)

    def _deadline(self, p: int, t_end: int) -> int:
        """When the markers the coordinator sent by t_end are on partition p (ModelResult.markers_written_by)."""
        return int(self.model.markers_written_by(np.array([p]), np.array([t_end], dtype=np.int64))[0])

    def _loss(self, partitions, ids) -> excuses.Claim | None:
        """LOSS_EVENT on an involved partition for what the transactions `ids` appended (-1: unjournaled, no span):
        from their earliest begin to the markers' deadline after their latest end."""
        begins, ends = self._at("t_begin_ns", ids), self._at("t_end_ns", ids)
        if self.model is None or not len(begins):
            return None
        for p in sorted({int(p) for p in partitions}):
            if c := excuses.loss_claim(self.model, p, int(begins.min()), self._deadline(p, int(ends.max()))):
                return c
        return None

    def _marker(self, rule: excuses.Rule, partitions, i: int, read_ns: int | None = None) -> excuses.Claim | None:
        """`rule` (a lost COMMIT or ABORT marker) for transaction i's marker on an involved partition: appended
        between its commit (or abort) call and the markers' deadline after its end; read_ns: the read it explains."""
        if self.model is None or i < 0:
            return None
        called = self.txns.at[i, "t_commit_ns"]
        lo = int(self.txns.at[i, "t_begin_ns"] if pd.isna(called) else called)
        parts = np.array(sorted({int(p) for p in partitions}), dtype=np.int64)
        hi = self.model.markers_written_by(parts, np.full(len(parts), int(self.txns.at[i, "t_end_ns"])))
        return next((c for c in marker_claims(rule, self.model, parts, np.full(len(parts), lo), hi,
                                              [read_ns] * len(parts)) if c), None)

    def _reprocessed(self, p: int, ids) -> excuses.Claim | None:
        """REPROCESSED_AFTER_LOSS for input p's copies by transactions `ids` (by end): a loss window of p holding
        anything appended before the first copy's markers' deadline, its event between the copies."""
        ends = np.sort(self._at("t_end_ns", ids))
        if self.model is None or len(ends) < 2:
            return None
        first = min(ids, key=lambda i: self.txns.at[i, "t_end_ns"] if i >= 0 else 2 ** 62)
        times = Times(committed=int(self.txns.at[first, "t_begin_ns"]), answered=int(ends[-1]))
        hi = self._deadline(p, int(ends[0]))
        for w in self.model._loss_windows(p):        # the model's own list: every window, not the first one met
            if w.start_ns <= hi and (c := excuses.claim(REPROCESSED_AFTER_LOSS, window_cause(w), times)):
                return c
        return None

    def ends(self) -> dict[int, int]:
        """Each input partition's final committed offset: the brokers' answer, else the journaled commits'."""
        got = self.meta.get("committed")
        if got:
            return {int(p): int(o) for p, o in got.items() if o is not None}
        commits = self.pairs(self.committed, "commit_partitions", "commit_offsets").rename(
            columns={"commit_partitions": "p", "commit_offsets": "o"})
        return {int(p): int(o) for p, o in commits.groupby("p")["o"].max().items()}

    # ---- exactly once ----------------------------------------------------------------------------------------
    def exactly_once(self) -> None:
        kept = self.kept.drop_duplicates(["value"])                # one value at two positions is a `duplicate`
        copies = kept.groupby(["in_p", "in_o"]).agg(n=("id", "size"), first=("value", "first"),
                                                    last=("value", "last"), t=("t_ns", "min"))
        twice = copies[copies["n"] > 1]
        writers = kept.set_index(["in_p", "in_o"]).loc[twice.index, "id"].groupby(level=[0, 1]).agg(list) \
            if len(twice) else {}
        for (p, o), r in twice.iterrows():
            self._add("eos_duplicate", f"input {p}:{o} has {r.n} committed outputs in the final drain "
                      f"({r['first']} ... {r['last']}); the offsets commit atomically with the output (KIP-98)",
                      self._reprocessed(int(p), writers[(p, o)]), partition=p, offset=o, value=r["first"],
                      t_read_ns=int(r.t))
        have = np.unique(copies.index.get_level_values(0).to_numpy(np.int64) * LIVE_KEY +
                         copies.index.get_level_values(1).to_numpy(np.int64))
        for p, end in sorted(self.ends().items()):
            if p in self.incomplete:
                continue
            want = np.arange(end, dtype=np.int64) + p * LIVE_KEY
            lost = want[~member(want, have)] - p * LIVE_KEY
            for o, i in zip(lost.tolist(), self._committers(p, lost).tolist()):
                self._add("eos_lost", f"input {p}:{o} lies below the group's committed offset {end} of its "
                          "partition, yet no committed output of it is in the final drain", self._lost_output(p, i),
                          partition=p, offset=o)
            self._behind(copies, p, end)

    def _committers(self, p: int, offsets: np.ndarray) -> np.ndarray:
        """Per input offset of partition p, the committed transaction that first committed p past it (-1: none
        journaled)."""
        c = self.pairs(self.committed, "commit_partitions", "commit_offsets", ("t_end_ns",))
        c = c[c["commit_partitions"] == p].sort_values(["commit_offsets", "t_end_ns"], kind="stable")
        at = np.searchsorted(c["commit_offsets"].to_numpy(np.int64), offsets, side="right")
        ids = np.append(c["id"].to_numpy(np.int64), -1)
        return ids[at]

    def _lost_output(self, p: int, i: int) -> excuses.Claim | None:
        """An output of transaction i lost with its records (written from its begin to its commit call) or with its
        COMMIT marker."""
        if self.model is None or i < 0:
            return None
        called = self.txns.at[i, "t_commit_ns"]
        end = int(self.txns.at[i, "t_end_ns"] if pd.isna(called) else called)
        return excuses.loss_claim(self.model, p, int(self.txns.at[i, "t_begin_ns"]), end) or \
            self._marker(COMMIT_MARKER_LOST, [p], i)

    def _behind(self, copies: pd.DataFrame, p: int, end: int) -> None:
        if not self.meta.get("committed") or p not in copies.index.get_level_values(0):
            return
        above = copies.loc[p].index
        above = above[above >= end]
        if len(above):
            ids = self.kept[(self.kept["in_p"] == p) & (self.kept["in_o"] >= end)]["id"].unique()
            self._add("eos_offset_behind", f"{len(above)} committed output(s) of input partition {p} lie at or "
                      f"above the group's final committed offset {end} (first {p}:{int(above[0])}); outputs and "
                      "offsets commit together", self._loss([p], ids), partition=p, offset=end)

    def order(self) -> None:
        """The final drain's outputs of one input partition follow their inputs' order (each input's first copy)."""
        first = self.kept.sort_values("offset").drop_duplicates(["in_p", "in_o"])
        for (p, _), g in first.groupby(["partition", "in_p"]):
            ins = g["in_o"].to_numpy()
            bad = np.flatnonzero(np.diff(ins) <= 0)
            if len(bad):
                a, b = g.iloc[int(bad[0])], g.iloc[int(bad[0]) + 1]
                self._add("eos_out_of_order", f"output partition {p}: the output of input {b.in_p}:{b.in_o} "
                          f"at offset {b.offset} follows that of {a.in_p}:{a.in_o} at {a.offset} "
                          f"({len(bad)} such step(s))", self._loss([p], [a.id, b.id]),
                          partition=p, offset=int(b.offset), value=b.value)

    def offsets_ahead(self) -> None:
        """A committed offset o of partition p with no committed output of input p:o-1 in the final drain."""
        cp = self.pairs(self.committed, "commit_partitions", "commit_offsets")
        cp = cp[(cp["commit_offsets"] > 0) & ~cp["commit_partitions"].isin(list(self.incomplete))]
        key = cp["commit_partitions"].astype("int64") * LIVE_KEY + cp["commit_offsets"].astype("int64") - 1
        have = np.unique((self.kept["in_p"] * LIVE_KEY + self.kept["in_o"]).to_numpy(np.int64))
        for r in cp[~member(key.to_numpy(np.int64), have)].itertuples():
            self._add("eos_offset_ahead", f"transaction {self._name(r.id)} committed offset "
                      f"{r.commit_offsets} of input partition {r.commit_partitions}, and the final drain holds no "
                      f"committed output of input {r.commit_partitions}:{r.commit_offsets - 1}",
                      self._loss([r.commit_partitions], [r.id]),
                      partition=int(r.commit_partitions), offset=int(r.commit_offsets),
                      producer=self.txns.at[r.id, "processor"])

    # ---- the graph -------------------------------------------------------------------------------------------
    def _offset_edges(self, live: np.ndarray) -> list[np.ndarray]:
        """ww along each input partition's committed offsets, wr from the writer of the offset a transaction
        started each partition at; G1a and precommitted reads found on the way."""
        commits = self.pairs(live, "commit_partitions", "commit_offsets", ("processor", "t_end_ns", "t_commit_ns"))
        commits = commits.sort_values(["commit_partitions", "commit_offsets", "t_end_ns"], kind="stable")
        same = commits["commit_partitions"].to_numpy()[1:] == commits["commit_partitions"].to_numpy()[:-1]
        ids = commits["id"].to_numpy()
        edges = [np.stack([ids[:-1][same], ids[1:][same], np.full(int(same.sum()), WW)])]
        reads = self.pairs(live, "read_partitions", "read_offsets", ("processor", "t_begin_ns"))
        starts = reads.drop_duplicates(["id", "read_partitions"])
        starts = starts[starts["read_offsets"] > 0]
        w = commits.rename(columns={"id": "writer", "processor": "w_processor", "commit_partitions": "read_partitions",
                                    "commit_offsets": "read_offsets"})
        j = starts.merge(w, on=["read_partitions", "read_offsets"], how="left")
        j = j.assign(other=j["w_processor"] != j["processor"]).sort_values(["id", "read_partitions", "other",
                                                                            "t_end_ns"], kind="stable")
        j = j.drop_duplicates(["id", "read_partitions"])
        found = j.dropna(subset=["writer"])
        edges.append(np.stack([found["writer"].to_numpy(np.int64), found["id"].to_numpy(np.int64),
                               np.full(len(found), WR)]))
        early = found[found["other"] & (found["t_commit_ns"] > found["t_begin_ns"])]
        for r in early.itertuples():
            self._add("precommitted_read", f"transaction {self._name(r.id)} began at offset "
                      f"{r.read_offsets} of input partition {r.read_partitions} before {self._name(int(r.writer))}, "
                      "which committed that offset, called commit", self._loss([r.read_partitions],
                                                                              [r.id, int(r.writer)]),
                      partition=r.read_partitions,
                      offset=r.read_offsets, producer=r.processor)
        self._aborted_starts(j[j["writer"].isna()])
        return edges

    def _aborted_starts(self, orphans: pd.DataFrame) -> None:
        t = self.txns
        ab = self.pairs((t["outcome"] == "aborted").to_numpy(), "commit_partitions", "commit_offsets")
        aborter = dict(zip(zip(ab["commit_partitions"].astype(int), ab["commit_offsets"].astype(int)),
                           ab["id"].astype(int)))
        keys = set(aborter)
        # a transaction its processor never journaled (killed within a journal flush of its end) whose outputs the
        # final drain holds committed the offset after its last input of each partition
        lost_lines = self.kept[self.kept["id"] < 0].groupby(["processor", "txn", "in_p"])["in_o"].max()
        keys -= {(int(p), int(o) + 1) for (_, _, p), o in lost_lines.items()}
        for r in orphans.itertuples():
            if (r.read_partitions, r.read_offsets) in keys and self.committed.iat[r.id]:
                self._add("g1a", f"committed transaction {self._name(r.id)} started input "
                          f"partition {r.read_partitions} at offset {r.read_offsets}, which only an aborted "
                          "transaction committed", self._marker(ABORT_MARKER_LOST, [r.read_partitions],
                                                                aborter[(r.read_partitions, r.read_offsets)],
                                                                int(self.txns.at[r.id, "t_begin_ns"])),
                          partition=r.read_partitions, offset=r.read_offsets,
                          producer=r.processor)

    def _output_edges(self) -> np.ndarray:
        k = self.kept[self.kept["id"] >= 0]
        first = k.groupby(["partition", "id"])["offset"].min().reset_index().sort_values(["partition", "offset"])
        same = first["partition"].to_numpy()[1:] == first["partition"].to_numpy()[:-1]
        ids = first["id"].to_numpy(np.int64)
        return np.stack([ids[:-1][same], ids[1:][same], np.full(int(same.sum()), WW)])

    def graph(self) -> None:
        live = (self.txns["outcome"] != "aborted").to_numpy()
        edges = np.concatenate(self._offset_edges(live) + [self._output_edges()], axis=1)
        for c in find_cycles(len(self.txns), edges[0], edges[1], edges[2]):
            parts = set(np.concatenate([self.txns.at[i, "read_partitions"] for i in c["nodes"]]).tolist())
            shown = ", ".join(self._name(i) for i in c["nodes"][:20]) + (" ..." if len(c["nodes"]) > 20 else "")
            self._add(c["kind"], f"{c['kind'].upper()}: {len(c['nodes'])} transactions ({shown}) in a cycle "
                      f"of {'write' if c['kind'] == 'g0' else 'write and read'} dependencies, e.g. "
                      f"{describe(c['cycle'], self._name)}", self._loss(parts, c["nodes"]),
                      producer=self.txns.at[c["nodes"][0], "processor"])

    # ---- G1a, internal, precommitted reads of outputs ----------------------------------------------------------
    def aborted_reads(self) -> None:
        bad = pd.concat([self.final, self.live])
        bad = bad[bad["outcome"] == "aborted"]
        for (consumer, i), g in bad.groupby(["consumer", "id"]):
            self._add("g1a", f"{consumer} read {len(g)} output(s) of aborted transaction "
                      f"{self._name(i)} (first {g['value'].iloc[0]})",
                      self._marker(ABORT_MARKER_LOST, g["partition"].unique(), int(i), int(g["t_ns"].min())),
                      partition=int(g["partition"].iloc[0]),
                      offset=int(g["offset"].iloc[0]), value=g["value"].iloc[0], consumer=consumer,
                      t_read_ns=int(g["t_ns"].min()))

    def precommitted_outputs(self) -> None:
        early = self.live[(self.live["id"] >= 0) & (self.live["t_ns"] < self.live["t_commit_ns"])]
        for (consumer, i), g in early.groupby(["consumer", "id"]):
            self._add("precommitted_read", f"{consumer} read {len(g)} output(s) of "
                      f"{self._name(i)} before it called commit", self._loss(g["partition"].unique(), [i]),
                      partition=int(g["partition"].iloc[0]),
                      offset=int(g["offset"].iloc[0]), value=g["value"].iloc[0], consumer=consumer,
                      t_read_ns=int(g["t_ns"].min()))

    def internal(self) -> None:
        for cols, what in ((["read_partitions", "read_offsets"], "read"), (["write_partitions", "write_offsets"],
                                                                          "wrote")):
            e = self.pairs(self.committed.to_numpy(), *cols)
            e = e[e[cols[1]] >= 0]
            if not len(e):
                continue
            e["step"] = e.groupby(["id", cols[0]])[cols[1]].diff()
            bad = e[(e["step"] > 1) | (e["step"] <= 0)] if what == "read" else e[e["step"] <= 0]
            for (i, p), g in bad.groupby(["id", cols[0]]):
                at, step = int(g[cols[1]].iloc[0]), int(g["step"].iloc[0])
                how = "int-poll-skip" if what == "read" and step > 1 else \
                    "int-nonmonotonic-poll" if what == "read" else "int-nonmonotonic-send"
                self._add("internal", f"{how}: transaction {self._name(i)} {what} partition {p} at offset "
                          f"{at} right after {at - step}", self._loss([p], [i]), partition=p, offset=at,
                          producer=self.txns.at[i, "processor"])

    def run(self) -> pd.DataFrame:
        for step in (self.exactly_once, self.order, self.offsets_ahead, self.graph, self.aborted_reads,
                     self.precommitted_outputs, self.internal):
            step()
        return rows_frame(self.rows, COLUMNS)


def find(txns: pd.DataFrame, reads: pd.DataFrame, eos_meta: dict, model=None, incomplete=()) -> pd.DataFrame:
    """Judged rows of the eos kinds. `reads`: reads.parquet (consumer, phase, partition, offset, value, t_ns)."""
    return EosCheck(txns, reads, eos_meta or {}, model, incomplete).run()
