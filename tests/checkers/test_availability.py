"""Observed unavailability: stalls are measured from the sends alone, then set against the model's windows."""
import pytest

from kafka_chaos.checkers.availability import reference_buckets, stalls, summary
from tests.checkers.conftest import MS, T, frames, send

S = 1000  # ms


def acked(value, t_ms, done_ms, partition=0, outcome="ok", acks="1"):
    row = send(value, partition=partition, offset=0, outcome=outcome, acks=acks, t=t_ms)
    row["t_complete_ns"] = None if done_ms is None else T + done_ms * MS
    return row


def stalls_of(rows, predicted=(), threshold_s=2.0, end_ms=None):
    s, _ = frames(rows, [])
    acks, pending = reference_buckets(s)
    return stalls(acks, pending, list(predicted), threshold_s, None if end_ms is None else T + end_ms * MS)


def steady(start_ms, end_ms, every_ms=50, partition=0, prefix="v"):
    return [acked(f"{prefix}{partition}-{t}", t, t + 5, partition) for t in range(start_ms, end_ms, every_ms)]


def test_a_steady_stream_of_acks_has_no_stall():
    assert stalls_of(steady(0, 20 * S)) == []


def test_timed_out_sends_between_acks_make_one_stall_from_the_first_pending_send_to_the_next_ack():
    rows = steady(0, 10 * S) + [acked(f"t{t}", t, t + 30 * S, outcome="info") for t in range(10 * S, 15 * S, 100)] \
        + steady(45 * S, 50 * S)
    (stall,) = stalls_of(rows)
    assert stall.start_ns == pytest.approx(T + 9_955 * MS, abs=100 * MS)       # the last ack before the stall
    assert stall.end_ns == T + (45 * S + 5) * MS                               # the first ack after it
    assert stall.seconds == pytest.approx(35, abs=0.2)


def test_slow_but_acked_sends_are_a_stall_too():
    rows = steady(0, 10 * S) + [acked(f"slow{t}", t, 60 * S + t // 10) for t in range(10 * S, 60 * S, 200)]
    (stall,) = stalls_of(rows)
    assert stall.end_ns == T + 61 * S * MS                   # the first slow ack
    assert stall.seconds == pytest.approx(51, abs=0.2)


def test_an_idle_producer_is_no_stall():
    assert stalls_of(steady(0, 5 * S) + steady(30 * S, 35 * S)) == []


def test_a_gap_shorter_than_the_threshold_is_no_stall():
    rows = steady(0, 5 * S) + [acked("late", 5 * S, 6 * S + 500)] + steady(6 * S + 500, 10 * S)
    assert stalls_of(rows, threshold_s=2.0) == []
    assert len(stalls_of(rows, threshold_s=1.0)) == 1


def test_sends_that_never_completed_stall_until_the_end_of_the_run():
    rows = steady(0, 5 * S) + [acked("stuck", 6 * S, None, outcome="info")]
    (stall,) = stalls_of(rows, end_ms=20 * S)
    assert stall.end_ns == T + 20 * S * MS


def test_partitions_stall_independently():
    rows = steady(0, 30 * S, partition=1) + steady(0, 5 * S, partition=0) + \
        [acked(f"t{t}", t, t + 10 * S, partition=0, outcome="info") for t in range(5 * S, 20 * S, 100)] + \
        steady(20 * S, 30 * S, partition=0, prefix="w")
    assert [s.partition for s in stalls_of(rows)] == [0]


def test_the_part_inside_a_predicted_window_is_predicted_and_the_rest_is_not():
    rows = steady(0, 10 * S) + [acked(f"t{t}", t, t + 30 * S, outcome="info") for t in range(10 * S, 20 * S, 100)] \
        + steady(40 * S, 55 * S)
    (stall,) = stalls_of(rows, predicted=[(T + 10 * S * MS, T + 20 * S * MS, 0), (T, T + 60 * S * MS, 1)])
    assert stall.predicted_ns == pytest.approx(10 * S * MS, abs=100 * MS)
    assert stall.unpredicted_s == pytest.approx(20, abs=0.2)


def test_acks_0_sends_are_never_part_of_availability():
    rows = steady(0, 5 * S) + [acked(f"z{t}", t, t, acks="0") for t in range(5 * S, 20 * S, 100)] + \
        steady(20 * S, 25 * S)
    assert stalls_of(rows) == []


def test_summary_gives_total_unpredicted_and_longest_per_partition():
    rows = steady(0, 10 * S) + [acked(f"t{t}", t, t + 30 * S, outcome="info") for t in range(10 * S, 15 * S, 100)] \
        + steady(45 * S, 50 * S)
    found = stalls_of(rows)
    out = summary(found, partitions=2, span_ns=50 * S * MS, threshold_s=2.0, max_stall_s=None)
    assert out["partitions"]["0"]["longest_s"] == pytest.approx(35, abs=0.2)
    assert out["partitions"]["1"] == {"stalled_s": 0, "unpredicted_s": 0, "longest_s": 0.0}
    assert out["unavailable_share"] == pytest.approx(35 / 100, abs=0.01)
    assert out["stalls"][0][2] == 0
