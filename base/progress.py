"""Long set-up steps (Kafka's jars from Maven Central, debootstrap, image import and build) say what they are
doing through one hook, so the layer that owns the screen (harness, with rich) can draw it. Without a display
installed each step is two log lines: its start and its duration."""
from __future__ import annotations

import contextlib
import logging
import time
from typing import Callable, ContextManager, Iterator

log = logging.getLogger("kafka-chaos")


class Step:
    """A running step; `update(detail)` names what it is doing now (a package, a jar, a build step)."""

    def __init__(self, title: str):
        self.title = title

    def update(self, detail: str) -> None:
        log.debug("%s: %s", self.title, detail)


StepFactory = Callable[[str], ContextManager[Step]]
_display: StepFactory | None = None


def install(factory: StepFactory | None) -> StepFactory | None:
    """Route steps to `factory` (None: back to log lines); returns the previous one, to put back."""
    global _display
    previous, _display = _display, factory
    return previous


@contextlib.contextmanager
def step(title: str) -> Iterator[Step]:
    if _display is not None:
        with _display(title) as s:
            yield s
        return
    log.info("%s ...", title)
    t0 = time.monotonic()
    yield Step(title)
    log.info("%s: done in %.1f s", title, time.monotonic() - t0)
