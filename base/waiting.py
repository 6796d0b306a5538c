"""Waiting with patience, one way for the whole house (on tenacity): for a condition to hold, or for a call that
fails for a while (a broker just restarted, a topic just created) to succeed."""
from __future__ import annotations

import logging
from typing import Callable, TypeVar

from tenacity import RetryError, Retrying, retry_if_exception_type, retry_if_result, stop_after_delay, wait_fixed

from kafka_chaos.base.errors import HarnessError

log = logging.getLogger(__name__)
T = TypeVar("T")


class WaitTimeout(HarnessError):
    """A readiness or health wait ran out."""


def wait_until(condition: Callable[[], object], timeout: float, message: str | Callable[[], str],
               interval: float = 0.5) -> object:
    """Poll `condition` until it returns something truthy; WaitTimeout with `message` after `timeout` s.

    Errors from the condition count as "not yet" (a broker that is down answers with errors), except
    WaitTimeout, which a condition raises to give up early (a node exited). The last error joins the message.
    """
    last_error: list[Exception] = []

    def attempt():
        try:
            return condition()
        except WaitTimeout:
            raise
        except Exception as e:
            log.debug("wait_until: %s", e)
            last_error[:] = [e]
            return None

    try:
        return Retrying(stop=stop_after_delay(timeout), wait=wait_fixed(interval),
                        retry=retry_if_result(lambda r: not r))(attempt)
    except RetryError:
        pass
    text = message() if callable(message) else message
    if last_error:
        text += f" (last error: {last_error[0]})"
    raise WaitTimeout(text)


def retry_call(call: Callable[[], T], timeout: float, interval: float = 0.5,
               errors: type[BaseException] | tuple[type[BaseException], ...] = Exception,
               on_retry: Callable[[BaseException], None] | None = None) -> T:
    """call() until it returns instead of raising one of `errors`; after `timeout` s its last error is raised."""
    def before_sleep(state):
        if on_retry is not None and state.outcome is not None and state.outcome.exception() is not None:
            on_retry(state.outcome.exception())

    for a in Retrying(stop=stop_after_delay(timeout), wait=wait_fixed(interval),
                      retry=retry_if_exception_type(errors), reraise=True, before_sleep=before_sleep):
        with a:
            return call()
    raise AssertionError("unreachable: tenacity either returns or re-raises")
