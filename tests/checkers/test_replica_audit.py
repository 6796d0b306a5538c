"""The replica audit's judgement on synthetic replica tables written through the history contract
(history/replicas.py): identical replicas are clean; a difference below the high watermark between ISR members is a
`replica_divergence` violation naming its offsets, replicas and epochs; the same difference at the high watermark, or
on a replica outside the ISR, is a counted `replica_difference`; a run without the audit's files is neither."""
from __future__ import annotations

import json

from kafka_chaos.checkers import replica_audit
from kafka_chaos.checkers.check import check_run
from kafka_chaos.history.replicas import ReplicaFiles, ReplicaState, replica_tables, write_replicas
from tests.checkers.conftest import read, send, write_run
from tests.history.test_record_batch import batch

SEG = "00000000000000000000.log"
EPOCHS = b"0\n2\n0 0\n3 2\n"


def log(values, epochs=(0, 3), split=2, pid=1000) -> bytes:
    """The replica's log: the first `split` values in a batch of leader epoch epochs[0], the rest in epochs[1]."""
    first = batch(0, values[:split], epoch=epochs[0], pid=pid, seq=0)
    return first + (batch(split, values[split:], epoch=epochs[1], pid=pid, seq=split) if values[split:] else b"")


def tables(replicas: dict[int, bytes], hw: int, isr=(1, 2, 3), leader=1, epochs=None):
    out = []
    for broker, seg in replicas.items():
        files = ReplicaFiles(broker, 0, {SEG: seg, "leader-epoch-checkpoint": (epochs or {}).get(broker, EPOCHS)})
        out.append((files, ReplicaState(leader=broker == leader, in_isr=broker in isr, hw=hw)))
    records, logs = replica_tables(out, "chaos", 1)
    return records.to_pandas(), logs.to_pandas()


VALUES = [b"p0-0", b"p0-1", b"p0-2", b"p0-3", b"p0-4"]
CHANGED = [b"p0-0", b"p0-1", b"p0-X", b"p0-3", b"p0-4"]


def found(replicas, hw, **kw):
    return replica_audit.find(*tables(replicas, hw, **kw))


def test_identical_replicas_are_clean():
    assert len(found({1: log(VALUES), 2: log(VALUES), 3: log(VALUES)}, hw=5)) == 0


def test_a_value_changed_below_the_hw_on_an_isr_member_is_a_violation_naming_offsets_replicas_and_epochs():
    out = found({1: log(VALUES), 2: log(VALUES), 3: log(CHANGED)}, hw=5)
    assert list(out["kind"]) == ["replica_divergence"] and list(out["classification"]) == ["violation"]
    row = out.iloc[0]
    assert (row["partition"], row["offset"], row["value"], row["multiplicity"]) == (0, 2, "p0-2", 2)
    assert "offset 2, below its high watermark 5" in row["reason"]
    assert "broker 3 (in the ISR): leader epoch 3, producer 1000 epoch 0 sequence 2" in row["reason"]
    assert "broker 1 (leader)" in row["reason"] and "3@2" in row["reason"]


def test_the_same_difference_at_the_hw_is_reported_not_judged():
    changed_last = VALUES[:4] + [b"p0-Y"]
    below = found({1: log(VALUES), 2: log(VALUES), 3: log(changed_last)}, hw=5)
    at = found({1: log(VALUES), 2: log(VALUES), 3: log(changed_last)}, hw=4)     # offset 4 is the HW itself
    assert list(below["kind"]) == ["replica_divergence"]
    assert list(at["kind"]) == ["replica_difference"] and list(at["classification"]) == ["allowed"]
    assert "at or above its high watermark 4" in at["reason"].iloc[0]


def test_the_same_difference_on_a_replica_outside_the_isr_is_reported_not_judged():
    out = found({1: log(VALUES), 2: log(VALUES), 3: log(CHANGED)}, hw=5, isr=(1, 2))
    assert list(out["kind"]) == ["replica_difference"] and "outside the ISR" in out["reason"].iloc[0]


def test_an_isr_member_lacking_committed_offsets_diverges_one_lacking_uncommitted_ones_does_not():
    short = log(VALUES[:3])
    assert list(found({1: log(VALUES), 2: log(VALUES), 3: short}, hw=5)["kind"]) == ["replica_divergence"]
    lagging = found({1: log(VALUES), 2: log(VALUES), 3: short}, hw=3)
    assert list(lagging["kind"]) == ["replica_difference"]
    assert "offsets 3..4 (2 offsets)" in lagging["reason"].iloc[0] and "lacks it" in lagging["reason"].iloc[0]


def test_a_different_leader_epoch_alone_is_a_divergence():
    out = found({1: log(VALUES), 2: log(VALUES), 3: log(VALUES, epochs=(0, 4))}, hw=5)
    assert list(out["kind"]) == ["replica_divergence"] and out["offset"].tolist() == [2]
    assert "offsets 2..4 (3 offsets)" in out["reason"].iloc[0]


def test_epoch_checkpoints_that_differ_below_the_hw_are_counted_only():
    out = found({1: log(VALUES), 2: log(VALUES), 3: log(VALUES)}, hw=5,
                epochs={1: b"0\n3\n0 0\n2 2\n3 2\n"})
    assert list(out["kind"]) == ["replica_difference"] and "leader-epoch checkpoints" in out["reason"].iloc[0]


def _run(tmp_path, replicas=None, **kw):
    values = [v.decode() for v in VALUES]
    run = write_run(tmp_path / "run", [send(v, offset=i, t=100 + i) for i, v in enumerate(values)],
                    [read(v, offset=i) for i, v in enumerate(values)], partitions=1)
    meta = json.loads((run / "meta.json").read_text())
    (run / "meta.json").write_text(json.dumps(meta | {"partitions": 1, "replica_audit": {"ran": True}}))
    if replicas is not None:
        records, logs = replica_tables([(ReplicaFiles(b, 0, {SEG: seg}), ReplicaState(b == 1, True, 5))
                                        for b, seg in replicas.items()], "chaos", 1)
        write_replicas(run, (records, logs))
    return run


def verdict(run) -> tuple[int, dict]:
    code = check_run(run, engine="pandas")
    return code, json.loads((run / "verdict.json").read_text())


def test_the_kind_reaches_the_verdict_and_a_run_without_the_audit_says_so(tmp_path):
    code, bad = verdict(_run(tmp_path / "a", {1: log(VALUES), 2: log(VALUES), 3: log(CHANGED)}))
    assert code == 1 and bad["violations"] == {"replica_divergence": 1} and bad["status"] == "invalid"
    assert bad["replica_audit"] == {"ran": True, "isr_whole": None, "divergences": 1, "differences": 0}
    code, clean = verdict(_run(tmp_path / "b", {1: log(VALUES), 2: log(VALUES), 3: log(VALUES)}))
    assert code == 0 and clean["status"] == "valid" and clean["anomalies"]["replica_divergence"] == 0
    code, old = verdict(_run(tmp_path / "c"))
    assert code == 0 and old["status"] == "valid" and old["replica_audit"]["ran"] is False
    assert "replica_logs.parquet absent" in old["replica_audit"]["why"]


def test_a_divergence_makes_a_run_with_an_incomplete_drain_invalid_where_without_it_it_gets_no_verdict(tmp_path):
    def undrained(run):
        meta = json.loads((run / "meta.json").read_text())
        drain = {"healthy": False, "incomplete": [0], "ends": {"0": len(VALUES)}, "records": 0}
        (run / "meta.json").write_text(json.dumps(meta | {"drain": drain}))
        return run
    code, bad = verdict(undrained(_run(tmp_path / "a", {1: log(VALUES), 2: log(VALUES), 3: log(CHANGED)})))
    assert code == 1 and bad["status"] == "invalid" and bad["violations"] == {"replica_divergence": 1}
    code, unjudged = verdict(undrained(_run(tmp_path / "b", {1: log(VALUES), 2: log(VALUES), 3: log(VALUES)})))
    assert code == 3 and unjudged["status"] == "incomplete" and unjudged["valid"] is None


def test_both_kinds_are_declared_once_judged_here_the_divergence_always_a_violation():
    from kafka_chaos.history.kinds import KINDS, REPLICAS
    from kafka_chaos.history.schema import ANOMALY_KINDS

    assert {k for k, v in KINDS.items() if v.judged_by == REPLICAS} == {replica_audit.DIVERGENCE,
                                                                         replica_audit.DIFFERENCE}
    assert KINDS["replica_difference"].violation_when.startswith("never")
    assert KINDS["replica_divergence"].violation_when.startswith("always")
    assert {"replica_divergence", "replica_difference"} <= set(ANOMALY_KINDS)
