"""The rows a local check's per-value pass needs, picked on the driver position by position.

The per-value pass (checkers.spark.hub) decides each value from all of its rows. Most values of any history are
plainly clean: one send, acked at (p, o), read there by the final drain (and maybe a live consumer), read nowhere
else; every per-value predicate is false for them (the test checkers.spark.buckets applies to a whole offset bucket
on a cluster). By buckets, an anomaly-dense history (bench `heavy`: timed-out sends that landed, spread evenly) has
no clean bucket, and the pass ran on all 25M rows of a 10M-send history: 18-21 CPU-s, the check's largest cost; and
Spark's bucket sums themselves took 12-15 CPU-s on every shape.

Here the same test is made per position, in numpy, from the files a local check's driver can read: a position is
clean when exactly one send was acked there, every read there is of that send's value (compared as strings, the
read against the acked send's value) and the final drain read it there. A send is left out of the pass when its
position is clean, it is not a nonmonotonic send, and its value is read at no unclean position (else the value is
read elsewhere too: a duplicate, and every row of it goes in). A read is left out when its position is clean. What
remains holds every row of each value it holds (the pass needs whole values) and every read at each position it
holds (checkers.divergent_files finds the divergent positions among them). A send that is not acked at a position
is left out too when nobody read its value and no kind can flag it unread (only `lost` does: ok, acks 1 or all, a
partition). Heavy's 25M rows become 1.7M, the tiled real history's 27.6M 32k, the clean one's 30M 1,500; ~4 CPU-s
on 10M sends. The look-ups after the pass read the copies too (checkers.lookup_files).

The rows kept are written, all their columns, uncompressed, to a temporary Parquet copy of each run's history that
Spark's look-ups read in place of the original, and aggregated per value beside it (checkers.summary_files): the
summary the per-value pass reads. Local checks up to `anomalies.ONE_TASK_ROWS` only: the files are read whole.
The same values unique in a run that the bucket sums rely on are relied on here (docs/history.md).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_chaos.checkers import bucket_files, divergent_files, summary_files
from kafka_chaos.checkers.spark.queries import ACKED, ACKS, OK, OUTCOMES

SENDS, READS = "sends.parquet", "reads.parquet"
MAX_SPAN = 1 << 26      # position cells at most in a dense table (per run): else a sort numbers the positions
MAX_COPIED_SHARE = 0.5  # a run keeping more of its rows is not copied (a run whose sends all had acks=0 keeps every
                        # read): the pass reads the original files, which then cost no uncompressed copy on disk
SCRATCH_PREFIX = "kafka-chaos-narrowed-"


def scratch() -> tempfile.TemporaryDirectory:
    """A temporary directory for one check's copies, named with this process's id; first, those of checks whose
    process is gone (killed: SIGKILL runs no clean-up) are removed, as a testcontainers reaper would."""
    root = Path(tempfile.gettempdir())
    for old in root.glob(f"{SCRATCH_PREFIX}*-*"):
        pid = old.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    return tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:         # another user's process: alive
        return True
    return True


@dataclass(frozen=True)
class Picked:
    """What `runs_narrowed` gives the per-value pass."""

    dirs: dict[str, Path]       # run_id -> a copy of its results directory holding the rows kept, or its own
    rows: int                   # how many rows were kept (sends and reads)
    counts: pd.DataFrame        # bucket_files.runs_bucket_counts' rows, from the same read of the files
    summaries: dict[str, Path] | None = None     # run_id -> a directory whose history/ holds summary_files.NAME,
    # the per-value summary of the rows kept, and the ambiguous values' exact columns (checkers.exact_files)
    # (None: the pass aggregates in Spark)
    ambiguous_at: pd.DataFrame | None = None      # (run, partition, offset) the ambiguous values were read at
    held: dict[int, pa.Table] | None = None       # run index -> its summary, held for `candidate_rows`; None when
    # a run was not copied (its summary is near all of its values: not held beside the pass)
    divergent: pd.DataFrame | None = None         # run, then divergent_files.COLUMNS: every divergent position

    def candidate_rows(self, flags: pd.DataFrame) -> pd.DataFrame:
        """The per-value pass's rows from Spark's slim answer (hub.candidates_of_summary with `row`) and the
        summaries held here (summary_files.candidate_rows)."""
        runs = flags["run"].to_numpy("int64")
        return pd.concat([summary_files.candidate_rows(self.held[run], flags[runs == run]) for run in self.held],
                         ignore_index=True)


def runs_narrowed(runs: dict[str, Path], columns: dict[str, dict[str, str]], nonmonotonic: Future,
                  into: Path) -> Picked:
    """Per run, into/<index>/history/{sends,reads}.parquet: the rows of `narrowed`, with the `columns` ({file:
    {column: Spark type}}) Spark loads (the run's own directory where it keeps more than MAX_COPIED_SHARE of its
    rows); and the bucket counts, from the same read. nonmonotonic: a Future of (run, op_id, ...) rows, `run` the
    run's index: waited for only once the rest is decided."""
    dirs, summaries, kept, counts, held, ambiguous, divergent = {}, {}, 0, [], {}, [], []
    with ThreadPoolExecutor(max_workers=2) as side:     # numpy and Arrow let go of the GIL: a second core's work
        for i, (run_id, run_dir) in enumerate(runs.items()):
            sends, reads = (pq.read_table(Path(run_dir) / "history" / name, columns=list(columns[name]),
                                          read_dictionary=[c for c in bucket_files.DICTIONARIES if c in columns[name]])
                            for name in (SENDS, READS))
            counting = side.submit(bucket_files.bucket_counts, sends.to_batches(), reads.to_batches())

            def ops(run: int = i) -> np.ndarray:
                frame: pd.DataFrame = nonmonotonic.result()
                return frame.loc[frame["run"] == run, "op_id"].to_numpy("int64")
            keep_s, keep_r = narrowed(sends, reads, ops)
            kept_sends, kept_reads = sends.filter(keep_s), reads.filter(keep_r)
            history = into / str(i) / "history"
            history.mkdir(parents=True)
            summary = side.submit(summary_files.write_summary, kept_sends, kept_reads, history)
            diverging = side.submit(divergent_files.several_values, kept_reads)
            summaries[run_id] = into / str(i)
            picked = kept_sends.num_rows + kept_reads.num_rows
            if picked > MAX_COPIED_SHARE * (len(keep_s) + len(keep_r)):
                dirs[run_id], picked = Path(run_dir), len(keep_s) + len(keep_r)      # the look-ups read the original
                held = None
            else:
                written = side.submit(pq.write_table, kept_sends, history / SENDS, compression="none")
                pq.write_table(kept_reads, history / READS, compression="none")
                written.result()
                dirs[run_id] = into / str(i)
            table, at = summary.result()
            if held is not None:
                held[i] = table
            ambiguous.append(at.assign(run=i))
            divergent.append(diverging.result().assign(run=i))
            counts.append(counting.result().assign(run=i))
            kept += picked
    return Picked(dirs, kept, pd.concat(counts, ignore_index=True)[bucket_files.COLUMNS], summaries,
                  pd.concat(ambiguous, ignore_index=True)[["run", "partition", "offset"]] if ambiguous else None, held,
                  pd.concat(divergent, ignore_index=True)[["run", *divergent_files.COLUMNS]] if divergent else None)


def narrowed(sends: pa.Table, reads: pa.Table, nonmonotonic) -> tuple[np.ndarray, np.ndarray]:
    """(sends kept, reads kept) as boolean masks: every row except a plainly clean value's, and except the sends no
    per-value kind can flag unread (not `lost`-able: not ok with acks 1 or all and a partition) that nobody read.
    nonmonotonic: a function giving the nonmonotonic sends' op_ids."""
    acked, losable = _acked(sends)
    cell_s, cell_r, cells = _cells(sends, reads, acked)
    at = np.flatnonzero(acked)
    clean = np.bincount(cell_s[at], minlength=cells) == 1           # one send acked at the position
    owner = np.full(cells, -1, np.int64)
    owner[cell_s[at]] = at
    own = owner[cell_r]
    matched = own >= 0
    sent_values = sends["value"].combine_chunks()
    read_values = reads["value"].combine_chunks()
    if matched.any():
        same = pc.equal(read_values.filter(pa.array(matched)), sent_values.take(pa.array(own[matched])))
        matched[matched] = pc.fill_null(same, False).to_numpy(zero_copy_only=False)
    clean[cell_r[~matched]] = False                                   # a read of another value, or where none was acked
    final = bucket_files.column_codes(reads["phase"], ("final",)) == 0
    drained = np.zeros(cells, bool)
    drained[cell_r[matched & final]] = True
    clean &= drained                                                  # the final drain read it there
    mono = np.isin(pc.fill_null(sends["op_id"], -1).to_numpy(), nonmonotonic())
    clean[cell_s[at[mono[at]]]] = False
    quiet = at[clean[cell_s[at]]]                                     # sends acked at a clean position
    # A value read anywhere but at the position it was acked at is read at an unclean one (a position nobody acked
    # it at is clean only with its acked value): the sends without an acked position that were read, and those
    # acked at a clean position read elsewhere too (duplicates, whose positions then go in whole).
    unread = np.flatnonzero(~acked & ~losable & ~mono)               # kinds only if read
    elsewhere = ~clean[cell_r]
    again = np.zeros(len(quiet) + len(unread), bool)
    if len(again) and elsewhere.any():
        found = pc.is_in(sent_values.take(pa.array(np.concatenate([quiet, unread]))),
                         value_set=read_values.filter(pa.array(elsewhere)))
        again = pc.fill_null(found, False).to_numpy(zero_copy_only=False)
    clean[cell_s[quiet[again[:len(quiet)]]]] = False
    keep_s = np.ones(len(cell_s), bool)
    keep_s[at] = ~clean[cell_s[at]]
    keep_s[unread] = again[len(quiet):]
    return keep_s, ~clean[cell_r]


def _acked(sends: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Sends acked (outcome ok, acks 1 or all) at a position: the only sends a clean position can hold; and those
    `lost` can flag unread (ok, acks 1 or all, a partition: history.kinds)."""
    level = np.isin(bucket_files.column_codes(sends["acks"], ACKS), [ACKS.index(a) for a in ACKED])
    ok = (bucket_files.column_codes(sends["outcome"], OUTCOMES) == OK) & level
    partition = pc.greater_equal(pc.fill_null(sends["partition"], -1), 0).to_numpy(zero_copy_only=False)
    offset = pc.greater_equal(pc.fill_null(sends["offset"], -1), 0).to_numpy(zero_copy_only=False)
    return ok & partition & offset, ok & partition


def _cells(sends: pa.Table, reads: pa.Table, acked: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """A number per position (partition, offset) for the acked sends (-1 for any other send) and the reads, and
    how many numbers: (partition - least) * width + offset where that table is small, else the positions' rank."""
    sp = pc.fill_null(sends["partition"], 0).to_numpy().astype(np.int64)[acked]
    so = pc.fill_null(sends["offset"], 0).to_numpy()[acked]
    rp = reads["partition"].to_numpy().astype(np.int64)      # validated: every read has a position
    ro = reads["offset"].to_numpy()
    cell_s = np.full(len(acked), -1, np.int64)
    if not len(rp) and not len(sp):
        return cell_s, np.zeros(0, np.int64), 0
    p = np.concatenate([sp, rp])
    o = np.concatenate([so, ro])
    low, width = int(p.min()), int(o.max()) + 1
    span = (int(p.max()) - low + 1) * width
    if o.min() >= 0 and span <= MAX_SPAN:
        cell = (p - low) * width + o
        cells = span
    else:
        _, cell = np.unique(np.stack([p, o]), axis=1, return_inverse=True)
        cell = cell.reshape(-1)
        cells = int(cell.max()) + 1
    cell_s[acked] = cell[:len(sp)]
    return cell_s, cell[len(sp):], cells
