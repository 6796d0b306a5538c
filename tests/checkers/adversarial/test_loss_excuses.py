"""Every rule that excuses a loss beside a counter-case where the same loss is a violation, judged end to end:
synthetic results directories written through the history contract and checked by `kafka-chaos check`."""
import pytest

from tests.checkers.conftest import fault, read, send, write_run
from tests.checkers.test_verdict_truth import S, checked, meta, steady_samples, with_times

FIVE = [1, 2, 3, 4, 5]


def _kind(rows, kind):
    found = rows[rows["kind"] == kind]
    return list(found["classification"]), list(found["reason"])


# -- an acks=1 write acked by a leader cut from its followers (a zombie, then a clean election drops its tail) ----

@pytest.mark.parametrize("acks, expected", [("1", "allowed"), ("all", "violation")])
def test_a_write_acked_by_a_leader_cut_from_its_followers_is_lost_allowed_only_with_acks_1(tmp_path, acks, expected):
    cut = [[1, 2], [2, 1], [1, 3], [3, 1], [1, 101], [101, 1]]
    faults = [fault(10 * S, "start", "net", [1], drops=cut), fault(30 * S, "heal", "net", [1], drops=cut)]
    sends = [send("a", offset=0, t=5 * S, acks=acks), send("b", offset=1, t=12 * S, acks=acks),
             send("c", offset=1, t=60 * S, acks=acks)]
    reads = [read("a", offset=0, t=100 * S), read("c", offset=1, t=100 * S)]
    m = meta(producers=[{"name": "p0", "acks": acks, "idempotent": True}])
    run = write_run(tmp_path / "r", sends, reads, faults, steady_samples(10 * S), **with_times(m))
    _, _, rows = checked(run)
    classes, reasons = _kind(rows, "lost")
    assert classes == [expected], reasons


# -- a committed record rewritten: the last replica standing's own power loss vs a bystander's --------------------

@pytest.mark.parametrize("standing, expected", [(True, "allowed"), (False, "violation")])
def test_a_rewritten_committed_position_is_excused_only_by_a_power_loss_of_the_log_that_led(tmp_path, standing,
                                                                                            expected):
    # min ISR 1, 3.9 (no ELR). standing: 2 and 3 die at 10 s, so broker 1 is the last ISR member; it loses power at
    # 100 s and is elected again at 110 s without its last 35 s. Otherwise follower 3 loses power and 1 keeps leading.
    victim = 1 if standing else 3
    faults = ([fault(10 * S, "start", "kill", [2]), fault(10 * S, "start", "kill", [3])] if standing else []) + \
        [fault(100 * S, "start", "power_loss", [victim]), fault(110 * S, "heal", "power_loss", [victim])]
    sends = [send("a", offset=0, t=90 * S), send("x", offset=0, t=150 * S)]
    reads = [read("a", offset=0, consumer="c0", t=91 * S), read("x", offset=0, t=200 * S)]
    m = meta(kafka_version="3.9.2", min_insync_replicas=1, brokers=FIVE)
    run = write_run(tmp_path / "r", sends, reads, faults, steady_samples(10 * S), **with_times(m, 240 * S))
    _, _, rows = checked(run)
    classes, reasons = _kind(rows, "divergent")
    assert classes == [expected], reasons
    classes, reasons = _kind(rows, "lost_after_read")
    assert classes == [expected], reasons


# -- an idempotent duplicate: an unclean election whose leader lacked the write vs one whose leader held it -------

@pytest.mark.parametrize("t_write, expected", [(13, "allowed"), (1, "violation")])
def test_an_idempotent_duplicate_is_excused_only_if_the_unclean_leader_lacked_the_first_copy(tmp_path, t_write,
                                                                                             expected):
    # the cascade: followers 2 and 3 die at 10 and 12 s, leader 1 at 14 s; 2, out of sync since 10 s, comes back
    # first and is elected uncleanly. A write acked at 13 s was on broker 1 alone; one acked at 1 s was on 2 too.
    m = meta(kafka_version="3.9.2", min_insync_replicas=1, unclean_leader_election=True)
    faults = [fault(10 * S, "start", "kill", [2]), fault(12 * S, "start", "kill", [3]),
              fault(14 * S, "start", "kill", [1]), fault(30 * S, "heal", "kill", [2]),
              fault(50 * S, "heal", "kill", [3]), fault(52 * S, "heal", "kill", [1])]
    sends = [send("a", offset=0, t=t_write * S)]
    reads = [read("a", offset=0), read("a", offset=1)]
    run = write_run(tmp_path / "r", sends, reads, faults, steady_samples(10 * S), **with_times(m))
    _, _, rows = checked(run)
    classes, reasons = _kind(rows, "duplicate")
    assert classes == [expected], reasons
