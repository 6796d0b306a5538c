"""Each anomaly definition on small hand-built histories, positive and negative (pandas reference finder).

The Spark finder runs the same cases in test_spark_anomalies.py and must agree row for row.
"""
from collections import Counter

import pandas as pd
import pytest

from kafka_chaos.checkers.reference import count, find_anomalies
from tests.checkers.conftest import MS, T, frames, read, send


def kinds(sends, reads) -> Counter:
    found = find_anomalies(*frames(sends, reads))
    return Counter(found["kind"])


# Each case: (name, sends, reads, expected counts of kinds). Shared with the Spark cross-check.
CASES = {
    "clean": (
        [send("a", offset=0), send("b", offset=1)],
        [read("a", offset=0, consumer="c0"), read("b", offset=1, consumer="c0"),
         read("a", offset=0), read("b", offset=1)],
        {}),
    "lost: acked, unread, drain reached its offset": (
        [send("a", offset=0), send("b", offset=1), send("c", offset=2)],
        [read("a", offset=0), read("c", offset=2)],
        {"lost": 1}),
    "lost: acked beyond the end the drain found (the log was cut back below it)": (
        [send("a", offset=0), send("b", offset=1)],
        [read("a", offset=0)],
        {"lost": 1}),
    "lost and lost_after_read: acked, read live, then absent from the drain": (
        [send("a", offset=0), send("b", offset=1)],
        [read("a", offset=0, consumer="c0"), read("b", offset=1, consumer="c0"), read("a", offset=0)],
        {"lost": 1, "lost_after_read": 1}),
    "lost_after_read whatever the outcome: an indeterminate send read live, then gone": (
        [send("a", offset=0), send("b", outcome="info")],
        [read("b", offset=1, consumer="c0"), read("a", offset=0)],
        {"lost_after_read": 1, "recovered": 1}),
    "lost_after_read of a phantom: read live, then gone": (
        [send("a", offset=0)],
        [read("ghost", offset=1, consumer="c0"), read("a", offset=0)],
        {"lost_after_read": 1, "phantom": 1}),
    "no lost_after_read: the drain has the value, at another offset": (
        [send("a", offset=0)],
        [read("a", offset=0, consumer="c0"), read("a", offset=5)],
        {"duplicate": 1}),
    "lost_after_read counts values, not reads: two live consumers, one value": (
        [send("a", offset=0), send("b", offset=1)],
        [read("b", offset=1, consumer="c0"), read("b", offset=1, consumer="c1"), read("a", offset=0)],
        {"lost": 1, "lost_after_read": 1}),
    "not lost: acks=0 sends are never lost": (
        [send("a", offset=0), send("b", acks="0"), send("c", offset=1)],
        [read("a", offset=0), read("c", offset=1)],
        {}),
    "lost: offset unknown, but the drain read its partition": (
        [send("a", offset=0), send("b", acks="1", offset=None)],
        [read("a", offset=0)],
        {"lost": 1}),
    "lost whether or not the drain read its partition (completeness is judged per partition later)": (
        [send("a", offset=0), send("b", partition=2, offset=None)],
        [read("a", offset=0)],
        {"lost": 1}),
    "not lost: an unread timed-out send": (
        [send("a", offset=0), send("b", outcome="info"), send("c", offset=1)],
        [read("a", offset=0), read("c", offset=1)],
        {}),
    "duplicate: one value at two offsets": (
        [send("a", offset=0)],
        [read("a", offset=0), read("a", offset=1)],
        {"duplicate": 1}),
    "no duplicate: two consumers read the same offset": (
        [send("a", offset=0)],
        [read("a", offset=0, consumer="c0"), read("a", offset=0, consumer="c1"), read("a", offset=0)],
        {}),
    "phantom: a value no send carries": (
        [send("a", offset=0)],
        [read("a", offset=0), read("ghost", offset=1), read("ghost", offset=1, consumer="c0")],
        {"phantom": 1}),
    "divergent: one offset, two values, counted once": (
        [send("a", offset=0), send("b", outcome="info"), send("c", outcome="info")],
        [read("a", offset=0), read("b", offset=0, consumer="c0"), read("c", offset=0, consumer="c1"),
         read("b", offset=0, consumer="c2")],
        {"divergent": 1, "recovered": 2, "lost_after_read": 2}),
    "duplicate across partitions: reported at the smallest (partition, offset)": (
        [send("a", partition=1, offset=0), send("b", partition=1, offset=1)],
        [read("a", partition=1, offset=0), read("a", partition=2, offset=0), read("a", partition=1, offset=7),
         read("b", partition=1, offset=1)],
        {"duplicate": 1}),
    "phantom read at two positions: a phantom and a duplicate, both at its first position": (
        [send("a", offset=0)],
        [read("a", offset=0), read("ghost", partition=1, offset=4), read("ghost", partition=1, offset=2)],
        {"phantom": 1, "duplicate": 1}),
    "divergent next to a duplicate: each counted once": (
        [send("a", offset=0), send("b", offset=1)],
        [read("a", offset=0), read("b", offset=1), read("a", offset=1, consumer="c0")],
        {"divergent": 1, "duplicate": 1}),
    "divergent: a timed-out send read live where another was acked and read (one candidate value there)": (
        [send("a", offset=0), send("b", outcome="info"), send("c", offset=1)],
        [read("a", offset=0), read("b", offset=0, consumer="c0"), read("c", offset=1), read("c", offset=1,
                                                                                              consumer="c0")],
        {"divergent": 1, "recovered": 1, "lost_after_read": 1}),
    "not divergent: a timed-out send read where nothing was acked": (
        [send("a", offset=0), send("b", outcome="info")],
        [read("a", offset=0), read("b", offset=1), read("b", offset=1, consumer="c0")],
        {"recovered": 1}),
    "timed-out and failed sends read at two positions each: recovered, failed_read and a duplicate each": (
        [send("a", offset=0), send("b", outcome="info"), send("c", outcome="fail", acks="all")],
        [read("a", offset=0), read("b", offset=1), read("b", offset=2), read("c", offset=3), read("c", offset=4)],
        {"recovered": 1, "failed_read": 1, "duplicate": 2}),
    "divergent at the middle one of three positions a value was read at": (
        [send("a", offset=0), send("b", offset=3)],
        [read("a", offset=0), read("a", offset=3, consumer="c0"), read("a", offset=5), read("b", offset=3)],
        {"divergent": 1, "duplicate": 1}),
    "failed_read: a definitely failed send is read": (
        [send("a", offset=0), send("b", outcome="fail")],
        [read("a", offset=0), read("b", offset=1)],
        {"failed_read": 1}),
    "recovered: an indeterminate send is read (counted, not an anomaly)": (
        [send("a", offset=0), send("b", outcome="info")],
        [read("a", offset=0), read("b", offset=1)],
        {"recovered": 1}),
    "offset_mismatch: acked at 0, read only at 1": (
        [send("a", offset=0)],
        [read("a", offset=1)],
        {"offset_mismatch": 1}),
    "no offset_mismatch: read at the acked offset and elsewhere (a duplicate)": (
        [send("a", offset=0)],
        [read("a", offset=0), read("a", offset=5)],
        {"duplicate": 1}),
    "nonmonotonic_send: counted per send lower than its predecessor": (
        [send("a", offset=5, t=0), send("b", offset=3, t=1), send("c", offset=4, t=2), send("d", offset=1, t=3)],
        [read(v, offset=o) for v, o in (("d", 1), ("b", 3), ("c", 4), ("a", 5))],
        {"nonmonotonic_send": 2}),
    "no nonmonotonic_send across producers or partitions": (
        [send("a", offset=5, t=0, process=0), send("b", offset=3, t=1, process=1, producer="p1"),
         send("c", partition=1, offset=0, t=2, process=0)],
        [read("b", offset=3), read("a", offset=5), read("c", partition=1, offset=0)],
        {}),
    "poll_skip: a live consumer jumps over an offset someone read": (
        [send(v, offset=o) for v, o in (("a", 0), ("b", 1), ("c", 2), ("d", 3))],
        [read("a", offset=0, consumer="c0"), read("d", offset=3, consumer="c0")] +
        [read(v, offset=o) for v, o in (("a", 0), ("b", 1), ("c", 2), ("d", 3))],
        {"poll_skip": 1}),
    "no poll_skip over a gap nobody read (compaction, aborted batches)": (
        [send("a", offset=0), send("d", offset=3)],
        [read("a", offset=0, consumer="c0"), read("d", offset=3, consumer="c0"),
         read("a", offset=0), read("d", offset=3)],
        {}),
    "no poll_skip in the final drain or when rewinding": (
        [send(v, offset=o) for v, o in (("a", 0), ("b", 1), ("c", 2))],
        [read("a", offset=0, consumer="c0"), read("b", offset=1, consumer="c0"), read("c", offset=2, consumer="c0"),
         read("a", offset=0, consumer="c0"), read("a", offset=0), read("c", offset=2), read("b", offset=1)],
        {}),
}


@pytest.mark.parametrize("name", CASES)
def test_definition(name):
    sends, reads, expected = CASES[name]
    assert kinds(sends, reads) == Counter(expected)


def test_empty_history_has_no_anomalies_and_zero_counts():
    s, r = frames([], [])
    assert len(find_anomalies(s, r)) == 0
    assert count(s, r).as_dict() == {"sends": 0, "ok": 0, "fail": 0, "info": 0, "reads": 0, "final_reads": 0}


def test_lost_row_carries_the_send_and_no_read_time():
    found = find_anomalies(*frames([send("a", offset=0, producer="p7"), send("b", offset=1)],
                                   [read("b", offset=1)]))
    row = found.iloc[0]
    assert (row["kind"], row["value"], row["offset"], row["producer"]) == ("lost", "a", 0, "p7")
    assert row["t_read_ns"] is pd_na()


def test_poll_skip_row_names_the_step():
    sends = [send(v, offset=o) for v, o in (("a", 0), ("b", 1), ("c", 2))]
    reads = [read("a", offset=0, consumer="c0"), read("c", offset=2, consumer="c0")] + \
        [read(v, offset=o) for v, o in (("a", 0), ("b", 1), ("c", 2))]
    row = find_anomalies(*frames(sends, reads)).iloc[0]
    assert (row["consumer"], row["from_offset"], row["offset"], row["value"]) == ("c0", 0, 2, "c")


def test_lost_after_read_row_is_at_the_live_read_and_carries_the_send():
    found = find_anomalies(*frames([send("a", offset=0), send("b", offset=1, producer="p3")],
                                   [read("b", offset=1, consumer="c0", t=500), read("a", offset=0)]))
    row = found[found["kind"] == "lost_after_read"].iloc[0]
    assert (row["value"], row["partition"], row["offset"], row["producer"]) == ("b", 0, 1, "p3")
    assert row["t_read_ns"] == T + 500 * MS


def test_min_isr_breach_needs_the_whole_ack_interval_inside_a_certain_window():
    sends = [send("a", offset=0, t=100), send("b", offset=1, t=300), send("c", offset=2, acks="1", t=300)]
    reads = [read(v, offset=o) for v, o in (("a", 0), ("b", 1), ("c", 2))]
    window = [(0, T + 299 * MS, T + 400 * MS)]           # b's [invoke, ack] is inside; a's is not; c is acks=1
    found = find_anomalies(*frames(sends, reads), breach_windows=window)
    assert list(found.loc[found["kind"] == "min_isr_breach", "value"]) == ["b"]
    assert not (find_anomalies(*frames(sends, reads), breach_windows=[(0, T + 301 * MS, T + 400 * MS)])["kind"]
                == "min_isr_breach").any()


def pd_na():
    return pd.NA
