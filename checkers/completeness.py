"""Whether a run can be judged at all: a verdict needs a complete final drain of every partition it speaks of.

A lost write is "acked, and absent from the final drain of its partition". That sentence means nothing for a
partition the drain did not read to its end, or read from a cluster that was not healthy (a replica it could not
reach may hold the record). So such partitions get no loss counts, and the run gets no verdict: a run that could
not be judged must never come out as a pass (docs/history.md, "verdict.json").
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafka_chaos.history.meta import RunMeta

COMPLETE, INCOMPLETE = "complete", "incomplete"


@dataclass(frozen=True)
class Completeness:
    """Which partitions the final drain read whole, and why the others (or the whole run) cannot be judged."""

    partitions: int
    incomplete: dict[int, str] = field(default_factory=dict)     # partition -> why its drain does not count
    run_reasons: tuple[str, ...] = ()                          # reasons that concern the whole run

    @property
    def status(self) -> str:
        return INCOMPLETE if self.incomplete or self.run_reasons else COMPLETE

    @property
    def complete_partitions(self) -> list[int]:
        return [p for p in range(self.partitions) if p not in self.incomplete]

    def as_dict(self) -> dict:
        return {"status": self.status, "run": list(self.run_reasons),
                "partitions": {str(p): why for p, why in sorted(self.incomplete.items())}}


def completeness(meta: RunMeta, final_reads_by_partition: dict[int, int], acked_partitions: set[int],
                 sends: int | None = None) -> Completeness:
    """Judge the drain from meta.json (`drain`, `interrupted`) and, for runs that did not record their drain, from
    the reads themselves: a partition that acked writes and that no final read touched was not drained.
    sends: how many sends the history holds; none at all means the workload never ran, which tests nothing."""
    every = range(meta.partitions)
    incomplete: dict[int, str] = {}
    run: list[str] = []
    if sends == 0:
        run.append("the history holds no send: the workload never wrote, so nothing was tested (logs/ says why "
                   "the producers did not run)")
    if meta.interrupted:
        run.append(f"the run was interrupted ({meta.interrupted}); its history stops there")
    drain = meta.drain
    if drain is None:
        for p in sorted(acked_partitions):
            if not final_reads_by_partition.get(p):
                incomplete[p] = ("no final reads: the drain did not run" if not any(final_reads_by_partition.values())
                                 else "acked writes, but the final drain read nothing from this partition")
    else:
        if drain.get("healthy") is False:
            why = ("the cluster was not healthy when the final drain began: a replica it could not reach may "
                   "hold records the drain did not see")
            incomplete.update({p: why for p in every})
        stuck = drain.get("stuck") or {}
        for p in drain.get("incomplete") or []:
            ends = drain.get("ends") or {}
            end = ends.get(str(p), ends.get(p))
            at = stuck.get(str(p), stuck.get(p))
            incomplete.setdefault(int(p), stuck_reason(at) if at else "the final drain did not read this partition "
                                  "to its end" + (f" (end offset {end})" if end is not None else ""))
    return Completeness(meta.partitions, incomplete, tuple(run))


def stuck_reason(at: dict) -> str:
    """Why a partition whose read_committed drain rested at its last stable offset has no loss verdict: what lies
    above an open transaction is unreadable, not lost (workloads/drain.py; the stuck LSO itself is `lso_stuck`)."""
    named = [o for o in at.get("open") or [] if "producer_id" in o]
    who = ("; the brokers name the open transaction's producer " + ", ".join(
        f"id {o['producer_id']} (epoch {o['producer_epoch']}, from offset {o['start_offset']})" for o in named)
        if named else "; the brokers named no open transaction's producer")
    return (f"the final drain (read_committed) rested at the last stable offset {at.get('lso')}, below the high "
            f"watermark {at.get('hw')}: records above it are unreadable behind a transaction nobody ended, not "
            f"known lost{who}")
