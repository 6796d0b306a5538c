"""The final drain's bookkeeping of partitions resting at a last stable offset below the high watermark
(workloads/drain.py), without brokers: given up after the wait, recorded as stuck with the producers named."""
import time

from kafka_chaos.workloads import drain


def test_a_partition_resting_below_its_end_is_given_up_after_the_wait_and_recorded_stuck(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(time, "time_ns", lambda: 5)
    r = drain._Resting()
    r.note(0, 286, 311)                         # at EOF, below the high watermark
    r.note(1, 50, 50)                           # at its end: not resting
    positions = {0: 286, 1: 50}
    assert r.given_up(positions, 35.0) == set()
    clock[0] = 136.0
    assert r.given_up(positions, 35.0) == {0}
    assert r.given_up(positions, None) == set()              # no wait given: only the read timeout ends it
    monkeypatch.setattr(time, "time_ns", lambda: 7)
    stuck = r.stuck([0], positions, {0: 311, 1: 50})
    assert list(stuck) == [0] and stuck[0]["lso"] == 286 and stuck[0]["hw"] == 311 and stuck[0]["until_ns"] == 7
    assert stuck[0]["since_ns"] <= stuck[0]["until_ns"] and stuck[0]["open"] == []


def test_a_position_that_moves_on_starts_the_wait_again(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    r = drain._Resting()
    r.note(0, 10, 40)
    clock[0] = 30.0
    r.note(0, 20, 40)                           # a transaction ended: the LSO moved
    clock[0] = 40.0
    assert r.given_up({0: 20}, 35.0) == set()
    assert r.stuck([0], {0: 25}, {0: 40}) == {}              # read past where it rested: not stuck


def test_the_open_transactions_named_go_into_each_stuck_partition():
    stuck = {2: {"lso": 10, "hw": 40, "open": []}}
    drain._name_open(stuck, lambda ps: {2: [{"producer_id": 9, "producer_epoch": 0, "start_offset": 10,
                                               "last_timestamp_ms": 1}]})
    assert stuck[2]["open"][0]["producer_id"] == 9
    drain._name_open({}, lambda ps: 1 / 0)                   # nothing stuck: nobody asked
