"""One way to wait, on tenacity: a condition until it holds, a flaky call until it answers."""
import itertools

import pytest

from kafka_chaos.base.waiting import WaitTimeout, retry_call, wait_until


def test_wait_until_returns_the_first_truthy_answer():
    tries = itertools.count()
    assert wait_until(lambda: next(tries) >= 3 and "ready", 5, "never ready", interval=0.01) == "ready"


def test_wait_until_names_the_last_error_when_time_runs_out():
    with pytest.raises(WaitTimeout, match=r"broker 2 not up \(last error: division by zero\)"):
        wait_until(lambda: 1 / 0, 0.2, "broker 2 not up", interval=0.05)


def test_a_condition_gives_up_early_by_raising_wait_timeout():
    def exited():
        raise WaitTimeout("kafka-1 exited while starting")

    with pytest.raises(WaitTimeout, match="exited"):
        wait_until(exited, 30, "never")


def test_retry_call_retries_only_the_errors_it_is_told_and_raises_the_last():
    tries = itertools.count()

    def flaky():
        if next(tries) < 2:
            raise ConnectionError("not yet")
        return 7

    assert retry_call(flaky, 5, 0.01, errors=ConnectionError) == 7
    with pytest.raises(KeyError):
        retry_call(lambda: {}["x"], 5, 0.01, errors=ConnectionError)    # not retried
    with pytest.raises(ConnectionError, match="down"):
        retry_call(lambda: (_ for _ in ()).throw(ConnectionError("down")), 0.1, 0.02)
