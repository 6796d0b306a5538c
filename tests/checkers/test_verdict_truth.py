"""The verdict, end to end through the history contract: every lost write counted, every judgement sound, no
verdict without a complete drain. Each run is a small results directory checked by `kafka-chaos check`."""
import json

import pandas as pd
import pytest

from kafka_chaos.harness.cli import main
from tests.checkers.conftest import fault, read, sample, send, write_run

S = 1000  # ms
DRAINED = {"healthy": True, "incomplete": [], "ends": {"0": 10}, "records": 10}


def meta(**kw):
    base = dict(partitions=1, replication_factor=3, min_insync_replicas=2, kafka_version="4.4.0",
                brokers=[1, 2, 3], controllers=[101], start_ns=None, end_ns=None, drain=DRAINED,
                broker_settings={"replica.lag.time.max.ms": "5000", "broker.session.timeout.ms": "6000"},
                producers=[{"name": "p0", "acks": "all", "idempotent": True}])
    base.update(kw)
    return base


def checked(run, *flags):
    code = main(["check", str(run), "--engine", "pandas", "--force", *flags])
    verdict = json.loads((run / "verdict.json").read_text())
    rows = pd.read_parquet(run / "anomalies.parquet")
    return code, verdict, rows


def steady_samples(until_ms, leader=1, isr=(1, 2, 3), hw=10, start_ms=0):
    return [sample(t, leader, isr, hw) for t in range(start_ms, until_ms, 500)]


def with_times(m, end_ms=120 * S):
    from tests.checkers.conftest import MS, T
    return {**m, "start_ns": T, "end_ns": T + end_ms * MS}


# -- every lost write counted ------------------------------------------------------------------------------------

def test_a_committed_record_that_vanishes_after_a_clean_election_is_a_violation(tmp_path):
    sends = [send("a", offset=0, t=1 * S), send("b", offset=1, t=2 * S)]
    reads = [read("a", offset=0, consumer="c0", t=3 * S), read("b", offset=1, consumer="c0", t=3 * S),
             read("a", offset=0, t=100 * S)]
    faults = [fault(10 * S, "start", "kill", [1], signal="SIGKILL"), fault(40 * S, "heal", "kill", [1])]
    run = write_run(tmp_path / "r", sends, reads, faults, steady_samples(120 * S), **with_times(meta()))
    code, verdict, rows = checked(run)
    assert code == 1 and verdict["status"] == "invalid"
    assert verdict["anomalies"]["lost"] == 1 and verdict["anomalies"]["lost_after_read"] == 1
    assert verdict["violations"] == {"lost": 1, "lost_after_read": 1}
    assert "committed" in rows.loc[rows["kind"] == "lost_after_read", "reason"].iat[0]


def test_an_acked_write_read_live_and_gone_counts_as_lost_whatever_the_live_consumer_saw(tmp_path):
    sends = [send("a", offset=0, t=1 * S), send("b", offset=1, t=2 * S)]
    reads = [read("b", offset=1, consumer="c0", t=3 * S), read("a", offset=0, t=100 * S)]
    run = write_run(tmp_path / "r", sends, reads, **with_times(meta()))
    code, verdict, _ = checked(run)
    assert verdict["anomalies"]["lost"] == 1 and verdict["observed"]["lost"] == 1


def test_a_committed_record_lost_to_a_predicted_unclean_election_is_allowed(tmp_path):
    # cascade: followers 2 and 3 die, then leader 1; out-of-sync 2 comes back first and is elected uncleanly
    m = meta(kafka_version="3.9.2", min_insync_replicas=1, unclean_leader_election=True,
             producers=[{"name": "p0", "acks": "all", "idempotent": True}])
    faults = [fault(10 * S, "start", "kill", [2], signal="SIGKILL"), fault(12 * S, "start", "kill", [3]),
              fault(14 * S, "start", "kill", [1]), fault(30 * S, "heal", "kill", [2]),
              fault(50 * S, "heal", "kill", [3]), fault(52 * S, "heal", "kill", [1])]
    sends = [send("a", offset=0, t=1 * S), send("b", offset=1, t=13 * S)]
    reads = [read("a", offset=0, consumer="c0", t=2 * S), read("b", offset=1, consumer="c0", t=13 * S + 100),
             read("a", offset=0, t=100 * S)]
    run = write_run(tmp_path / "r", sends, reads, faults, steady_samples(10 * S), **with_times(m))
    code, verdict, rows = checked(run)
    lar = rows[rows["kind"] == "lost_after_read"]
    assert list(lar["classification"]) == ["allowed"], list(lar["reason"])
    assert "unclean" in lar["reason"].iat[0]
    assert code == 0


# -- no verdict without a complete drain -------------------------------------------------------------------------

def test_a_run_killed_before_its_drain_gets_no_verdict_and_exit_3(tmp_path):
    sends = [send("a", offset=0), send("b", offset=1)]
    reads = [read("a", offset=0, consumer="c0")]
    run = write_run(tmp_path / "r", sends, reads, **with_times(meta(drain=None, interrupted="killed (repair)")))
    code, verdict, _ = checked(run)
    assert code == 3
    assert verdict["valid"] is None and verdict["status"] == "incomplete"
    assert verdict["anomalies"]["lost"] == 0                   # nothing is counted where the drain never ran
    assert "interrupted" in verdict["incomplete"]["run"][0]


def test_lost_writes_count_only_in_partitions_the_drain_read_whole(tmp_path):
    m = meta(partitions=2, drain={"healthy": True, "incomplete": [1], "ends": {"0": 2, "1": 9}})
    sends = [send("a", offset=0), send("b", offset=1), send("c", partition=1, offset=0)]
    reads = [read("a", offset=0)]
    run = write_run(tmp_path / "r", sends, reads, **with_times(m))
    code, verdict, rows = checked(run)
    assert code == 3 and verdict["valid"] is None
    assert verdict["anomalies"]["lost"] == 1 and set(rows.loc[rows["kind"] == "lost", "partition"]) == {0}
    assert verdict["violations"] == {"lost": 1}                # still reported for the partition that completed
    assert "1" in verdict["incomplete"]["partitions"]


def test_a_drain_from_an_unhealthy_cluster_gives_no_verdict(tmp_path):
    run = write_run(tmp_path / "r", [send("a", offset=0)], [read("a", offset=0)],
                    **with_times(meta(drain={"healthy": False, "incomplete": []})))
    code, verdict, _ = checked(run)
    assert code == 3 and verdict["valid"] is None


# -- sound judgements ---------------------------------------------------------------------------------------------

def test_a_phantom_is_a_violation_even_when_the_model_predicts_an_unclean_election(tmp_path):
    m = meta(kafka_version="3.9.2", min_insync_replicas=1, unclean_leader_election=True)
    faults = [fault(10 * S, "start", "kill", [2]), fault(12 * S, "start", "kill", [3]),
              fault(14 * S, "start", "kill", [1]), fault(30 * S, "heal", "kill", [2])]
    reads = [read("a", offset=0), read("ghost", offset=1)]
    run = write_run(tmp_path / "r", [send("a", offset=0)], reads, faults, steady_samples(10 * S), **with_times(m))
    code, verdict, _ = checked(run)
    assert verdict["violations"].get("phantom") == 1 and code == 1


def test_an_idempotent_producers_duplicate_is_a_violation_without_an_unclean_election(tmp_path):
    run = write_run(tmp_path / "r", [send("a", offset=0)], [read("a", offset=0), read("a", offset=1)],
                    **with_times(meta()))
    code, verdict, _ = checked(run)
    assert verdict["violations"] == {"duplicate": 1} and code == 1


def test_an_idempotent_producers_duplicate_after_a_predicted_unclean_election_is_allowed(tmp_path):
    m = meta(kafka_version="3.9.2", min_insync_replicas=1, unclean_leader_election=True)
    faults = [fault(10 * S, "start", "kill", [2]), fault(12 * S, "start", "kill", [3]),
              fault(14 * S, "start", "kill", [1]), fault(30 * S, "heal", "kill", [2]),
              fault(50 * S, "heal", "kill", [3]), fault(52 * S, "heal", "kill", [1])]
    sends = [send("a", offset=0, t=1 * S), send("b", offset=1, t=13 * S)]
    reads = [read("a", offset=0), read("b", offset=1), read("b", offset=2)]
    run = write_run(tmp_path / "r", sends, reads, faults, steady_samples(10 * S), **with_times(m))
    code, verdict, rows = checked(run)
    dup = rows[rows["kind"] == "duplicate"]
    assert list(dup["classification"]) == ["allowed"], list(dup["reason"])


def test_an_idempotent_duplicate_after_the_same_producers_messages_timed_out_is_the_clients_epoch_bump(tmp_path):
    # librdkafka bumps the epoch for every partition when messages time out; a retry that was already in the
    # log is sent again under the new epoch, and the broker cannot dedup across epochs
    from tests.checkers.conftest import MS
    slow = send("a", offset=0, t=0)
    slow["t_complete_ns"] += 40 * S * MS                          # pending for 40 s, acked in the end
    timed_out = send("x", outcome="info", t=30 * S)               # another message timed out meanwhile
    run = write_run(tmp_path / "r", [slow, timed_out], [read("a", offset=0), read("a", offset=1)],
                    **with_times(meta()))
    code, verdict, rows = checked(run)
    (reason,) = rows[rows["kind"] == "duplicate"]["reason"]
    assert verdict["violations"] == {} and code == 0
    assert "librdkafka" in reason and "timed out" in reason


def test_the_client_voids_read_while_the_pass_runs_or_after_it_give_the_same_verdict(tmp_path, monkeypatch):
    from kafka_chaos.checkers import client
    from kafka_chaos.history.layout import sends_path
    from kafka_chaos.history.meta import load_meta
    from tests.checkers.conftest import MS
    slow = send("a", offset=0, t=0)
    slow["t_complete_ns"] += 40 * S * MS
    history = ([slow, send("x", outcome="info", t=30 * S)], [read("a", offset=0), read("a", offset=1)])
    early = write_run(tmp_path / "early", *history, **with_times(meta()))
    late = write_run(tmp_path / "late", *history, **with_times(meta()))
    assert client.may_void(load_meta(early).producers, sends_path(early))    # idempotent: read beside the pass
    assert not client.may_void([{"name": "p0", "idempotent": False}], sends_path(early))    # no duplicate needs them
    _, verdict, rows = checked(early)
    monkeypatch.setattr(client, "EARLY_VOIDS_MAX_SENDS", 1)           # a history too large: read after it
    assert not client.may_void(load_meta(late).producers, sends_path(late))
    _, late_verdict, late_rows = checked(late)
    assert verdict["violations"] == late_verdict["violations"] == {}
    assert "timed out" in rows.loc[rows["kind"] == "duplicate", "reason"].item()
    pd.testing.assert_frame_equal(rows, late_rows)


def write_bump_line(run, producer: str, at_ns: int, reason="skipped sequence numbers"):
    """The line librdkafka's `eos` debug context writes when an idempotent producer starts an epoch bump."""
    import logging

    from kafka_chaos.history.client_log import ClientLogHandler, client_log_path
    text = ("[thrd:kc-b1:9092/1]: Beginning partition drain in state Assigned for PID{Id:1000,Epoch:0} epoch bump "
            f"for 3 partition(s) with in-flight requests: {reason}")
    rec = logging.LogRecord("kc", logging.DEBUG, __file__, 1, "%s [%s] %s", ("DRAIN", "rdkafka#producer-1", text),
                            None)
    rec.created = at_ns / 1e9
    handler = ClientLogHandler(client_log_path(run), f"producer-{producer}")
    handler.emit(rec)
    handler.close()


def bumped_duplicate(tmp_path, producer: str, bump_after_s: float):
    from tests.checkers.conftest import MS
    slow = send("a", offset=0, t=0)
    slow["t_complete_ns"] += 10 * S * MS                         # pending for 10 s during a leader change
    run = write_run(tmp_path / "r", [slow], [read("a", offset=0), read("a", offset=1)], **with_times(meta()))
    write_bump_line(run, producer, slow["t_invoke_ns"] + int(bump_after_s * 1e9))
    return checked(run)


def test_an_idempotent_duplicate_across_an_epoch_bump_the_client_logged_is_the_clients(tmp_path):
    # librdkafka#4953: an OUT_OF_ORDER_SEQUENCE_NUMBER during a leader change bumps the epoch with no timeout at all
    code, verdict, rows = bumped_duplicate(tmp_path, "p0", bump_after_s=4)
    (reason,) = rows[rows["kind"] == "duplicate"]["reason"]
    assert verdict["violations"] == {} and code == 0
    assert "skipped sequence numbers" in reason and "librdkafka#4953" in reason


def test_an_epoch_bump_of_another_producer_or_after_the_ack_voids_nothing(tmp_path):
    code, verdict, _ = bumped_duplicate(tmp_path / "other", "p1", bump_after_s=4)
    assert verdict["violations"] == {"duplicate": 1} and code == 1
    code, verdict, _ = bumped_duplicate(tmp_path / "late", "p0", bump_after_s=11)
    assert verdict["violations"] == {"duplicate": 1} and code == 1


def test_a_timeout_of_another_producer_voids_nothing(tmp_path):
    from tests.checkers.conftest import MS
    slow = send("a", offset=0, t=0)
    slow["t_complete_ns"] += 40 * S * MS
    other = send("x", outcome="info", producer="p1", process=1, t=30 * S)
    run = write_run(tmp_path / "r", [slow, other], [read("a", offset=0), read("a", offset=1)],
                    **with_times(meta()))
    code, verdict, _ = checked(run)
    assert verdict["violations"] == {"duplicate": 1} and code == 1


def test_an_acks_all_ack_while_the_isr_is_certainly_below_min_isr_is_a_violation(tmp_path):
    faults = [fault(10 * S, "start", "kill", [2]), fault(10 * S, "start", "kill", [3], fault_name="kill-3")]
    sends = [send("a", offset=0, t=1 * S), send("b", offset=1, t=60 * S)]
    reads = [read("a", offset=0), read("b", offset=1)]
    samples = steady_samples(20 * S) + steady_samples(100 * S, isr=(1,), start_ms=20 * S)
    run = write_run(tmp_path / "r", sends, reads, faults, samples, **with_times(meta()))
    code, verdict, rows = checked(run)
    assert verdict["violations"] == {"min_isr_breach": 1}
    assert list(rows.loc[rows["kind"] == "min_isr_breach", "value"]) == ["b"]


def test_no_breach_while_the_brokers_still_see_a_full_isr_whatever_the_controller_decided(tmp_path):
    # the model's controller shrinks the ISR; the brokers' metadata (what a leader checks) never showed it
    faults = [fault(10 * S, "start", "kill", [2]), fault(10 * S, "start", "kill", [3], fault_name="kill-3")]
    sends = [send("a", offset=0, t=1 * S), send("b", offset=1, t=60 * S)]
    reads = [read("a", offset=0), read("b", offset=1)]
    run = write_run(tmp_path / "r", sends, reads, faults, steady_samples(100 * S), **with_times(meta()))
    code, verdict, _ = checked(run)
    assert verdict["anomalies"]["min_isr_breach"] == 0


def test_a_loss_that_only_an_unpredicted_high_watermark_drop_explains_is_a_violation_named_as_such(tmp_path):
    samples = steady_samples(20 * S, hw=100) + steady_samples(60 * S, leader=2, isr=(2, 3), hw=40, start_ms=20 * S)
    sends = [send(f"v{i}", offset=i, t=100 + i) for i in range(100)]
    reads = [read(f"v{i}", offset=i, t=90 * S) for i in range(40)]
    run = write_run(tmp_path / "r", sends, reads, [], samples, **with_times(meta(), 60 * S))
    code, verdict, rows = checked(run)
    assert code == 1 and verdict["violations"] == {"lost": 60}
    assert verdict["model_disagreements"], "the model predicted no truncation; the cluster showed one"
    assert "did not predict" in rows.loc[rows["kind"] == "lost", "reason"].iat[0]


# -- availability ---------------------------------------------------------------------------------------------------

def stalled_run(tmp_path):
    ok = [send(f"a{t}", offset=i, acks="1", t=t) for i, t in enumerate(range(0, 10 * S, 100))]
    late = [send(f"late{t}", offset=100 + i, acks="1", t=t) for i, t in enumerate(range(10 * S, 12 * S, 100))]
    for row in late:
        row["t_complete_ns"] = row["t_invoke_ns"] + 20 * S * 1_000_000   # acked 20 s later
    reads = [read(r["value"], offset=r["offset"]) for r in ok + late]
    m = meta(producers=[{"name": "p0", "acks": "1", "idempotent": False}])
    return write_run(tmp_path / "r", ok + late, reads, **with_times(m, 40 * S))


def test_a_stall_is_measured_from_the_sends_and_reported_not_judged(tmp_path):
    code, verdict, rows = checked(stalled_run(tmp_path))
    assert code == 0
    assert verdict["availability"]["longest_s"] == pytest.approx(20, abs=0.5)
    assert verdict["availability"]["unpredicted_s"] == pytest.approx(20, abs=0.5)   # no fault: nothing predicted
    assert verdict["unavailable"] > 0
    assert list(rows.loc[rows["kind"] == "stall", "classification"]) == ["allowed"]


def test_a_stall_beyond_max_stall_is_a_violation(tmp_path):
    code, verdict, _ = checked(stalled_run(tmp_path), "--max-stall", "10")
    assert code == 1 and verdict["violations"] == {"stall": 1}


def test_max_stall_below_the_threshold_is_refused(tmp_path, capsys):
    assert main(["check", str(stalled_run(tmp_path)), "--engine", "pandas", "--max-stall", "1"]) == 2
    assert "--max-stall" in capsys.readouterr().err
