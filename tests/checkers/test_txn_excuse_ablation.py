"""Ablations of the transaction marker excuses, end to end (`kafka-chaos check` on results directories written
through the history contract): the cascade of test_excuse_ablation.py (followers 2 and 3 die at 10/12 s, leader 1
at 14 s, 2 comes back and is elected uncleanly on 3.9.2, min ISR 1) removes what broker 1 alone appended just before
14 s, a transaction's marker among it. With the cascade 100 s later, or the transaction after the heal, the same
anomaly is a violation; and a second committed eos copy made after that loss (eos.reprocessed_after_loss). `ABLATIONS`
(rule -> [(kind, build, moves)]) is for the registry of every rule's ablation (test_excuse_ablation.py)."""
from __future__ import annotations

import pandas as pd
import pytest

from tests.checkers.conftest import fault, read, send, write_run
from tests.checkers.test_verdict_truth import S, checked, meta, steady_samples, with_times

MOVES = ("cause later", "write after the cause")


def _cascade(shift: int) -> list[dict]:
    return [fault(shift + 10 * S, "start", "kill", [2], signal="SIGKILL"), fault(shift + 12 * S, "start", "kill", [3]),
            fault(shift + 14 * S, "start", "kill", [1]), fault(shift + 30 * S, "heal", "kill", [2]),
            fault(shift + 50 * S, "heal", "kill", [3]), fault(shift + 52 * S, "heal", "kill", [1])]


def _run(tmp_path, sends, reads, move, end=260 * S):
    m = meta(kafka_version="3.9.2", min_insync_replicas=1, unclean_leader_election=True,
             producers=[{"name": "p0", "acks": "all", "idempotent": True, "transactional": True}])
    faults = _cascade(100 * S if move == "cause later" else 0)
    return write_run(tmp_path / "r", sends, reads, faults, steady_samples(10 * S), **with_times(m, end))


def _classes(run, kind):
    _, _, rows = checked(run)
    found = rows[rows["kind"] == kind]
    return list(found["classification"]), list(found["excuse"]), list(found["reason"])


def lost_commit_marker(tmp_path, move):
    """A committed transactional write acked at 5 s, on every replica (the model calls it guaranteed), whose
    transaction committed at 13 s: its COMMIT marker, on broker 1 alone, is in the election's window; the final drain
    lacks the write."""
    t = 70 * S if move == "write after the cause" else 5 * S
    sends = [send("0-0", offset=0, t=1 * S), send("0-1", offset=1, t=t)]
    reads = [read("0-0", offset=0, t=240 * S)]
    return _classes(_run(tmp_path, sends, reads, move), "lost")


def lost_abort_marker(tmp_path, move):
    """A transactional write sent at 5 s and aborted at 13 s (its ABORT marker on broker 1 alone, in the election's
    window), read by the final drain: the elected replica held it without its marker."""
    t = 70 * S if move == "write after the cause" else 5 * S
    aborted = send("0-1", offset=None, outcome="fail", t=t)
    aborted["error"] = "_TXN_ABORTED"
    aborted["t_complete_ns"] = aborted["t_invoke_ns"] + 8 * S * 1_000_000
    sends = [send("0-0", offset=0, t=1 * S), aborted]
    reads = [read("0-0", offset=0, t=240 * S), read("0-1", offset=1, t=240 * S)]
    return _classes(_run(tmp_path, sends, reads, move), "failed_read")


def reprocessed_input(tmp_path, move):
    """`--workload eos`: e0's transaction 2 (inputs 0:4-5) ran at 13 s, just before the cascade's loss on
    partition 0; its transaction 19 at 100 s wrote input 0:4's output again: a second committed copy after the
    election. Moves: the cascade 100 s later (after the second copy), the first copy after the heal (70 s)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kafka_chaos.history.eos import input_value, output_value
    from kafka_chaos.history.schema import EOS_SCHEMA
    from kafka_chaos.history.synthetic.eos import T0, eos_history
    from tests.checkers.conftest import MS, T

    txns, reads, eos_meta = eos_history(transactions=60, partitions=6, processors=3, per_partition=2, live=False)
    # after the cause: after the latest election any replay places (the late one unfences broker 2 at 95 s,
    # RESTART_UNFENCE_NS after its restart) and before the second copy
    start = T + (97 if move == "write after the cause" else 13) * S * MS
    for col in ("t_begin_ns", "t_commit_ns", "t_end_ns"):
        txns[col] = txns[col] - T0 + start
        txns.loc[57, col] = txns.at[57, col] - start + T + 100 * S * MS      # e0's transaction 19
    reads["t_ns"] = T + 240 * S * MS
    extra = reads.iloc[[0]].assign(value=output_value(0, 4, input_value(1, 0, 4), "e0", 19), offset=10_000)
    rows = [dict(r, key=None) for r in pd.concat([reads, extra], ignore_index=True).to_dict("records")]
    m = meta(kafka_version="3.9.2", min_insync_replicas=1, unclean_leader_election=True, partitions=6,
             workload="eos", eos=eos_meta)
    run = write_run(tmp_path / "r", [], rows, _cascade(100 * S if move == "cause later" else 0),
                    steady_samples(10 * S), **with_times(m, 260 * S))
    pq.write_table(pa.Table.from_pandas(txns, schema=EOS_SCHEMA, preserve_index=False), run / "history/eos.parquet")
    return _classes(run, "eos_duplicate")


ABLATIONS = {
    "txn.commit_marker_lost": [("lost", lost_commit_marker, MOVES)],
    "txn.abort_marker_lost": [("failed_read", lost_abort_marker, MOVES)],
    "eos.reprocessed_after_loss": [("eos_duplicate", reprocessed_input, MOVES)],
}
CASES = [(name, kind, build, move) for name, abl in ABLATIONS.items() for kind, build, moves in abl
         for move in ("none", *moves)]


@pytest.mark.parametrize("name, kind, build, move", CASES,
                         ids=[f"{n}-{k}-{m.replace(' ', '_')}" for n, k, _, m in CASES])
def test_each_transaction_excuse_holds_only_with_its_loss_in_the_span_it_covers(tmp_path, name, kind, build, move):
    classes, excuse, reasons = build(tmp_path, move)
    if move == "none":
        assert classes and set(classes) == {"allowed"}, reasons
        assert set(excuse) == {name}, (excuse, reasons)
    else:
        assert classes and set(classes) == {"violation"}, (move, reasons)
        assert not any(isinstance(e, str) for e in excuse)
