"""What a run shows while it runs: phase, elapsed and remaining time, ops/s, current faults, ISR per partition.

On a terminal one status line is redrawn in place; otherwise (CI, pipes) a plain log line every few seconds.
"""
from __future__ import annotations

import logging
import sys
import time

log = logging.getLogger("kafka-chaos")


class LiveDisplay:
    def __init__(self, enabled: bool, out=None):
        self.enabled = enabled
        self.out = out or sys.stdout
        self._phase = "start"
        self._t0 = time.monotonic()
        self._drawn = False

    def phase(self, name: str) -> None:
        self._end_line()
        self._phase = name
        log.info("phase: %s", name)

    def watch(self, cluster, topic: str, workload, nemesis, duration_s: float) -> None:
        """Block for the run's duration, showing its state."""
        start = time.monotonic()
        interval = 1.0 if self.enabled else 5.0
        next_show = start
        while (now := time.monotonic()) < start + duration_s:
            if now >= next_show:
                self._show(self.status_line(cluster, topic, workload, nemesis, now - start, duration_s))
                next_show = now + interval
            time.sleep(min(0.2, max(0.0, start + duration_s - time.monotonic())))
        self._end_line()

    def status_line(self, cluster, topic, workload, nemesis, elapsed: float, duration_s: float) -> str:
        s = workload.stats()
        faults = ",".join(f.name for f in list(nemesis.active)) or "none"
        try:
            isr = " ".join(f"p{p.partition}:{p.leader if p.leader is not None else '-'}/"
                           f"{','.join(map(str, p.isr))}" for p in cluster.describe(topic, timeout=2))
        except Exception:
            isr = "unavailable"
        return (f"[{self._phase}] {elapsed:5.0f}s / {duration_s:.0f}s (-{max(0.0, duration_s - elapsed):.0f}s) "
                f"{s.sends_per_s:7.0f} sends/s  ok {s.ok} fail {s.fail} info {s.info}  reads {s.reads}  "
                f"faults: {faults}  leader/ISR {isr}")

    def _show(self, line: str) -> None:
        if self.enabled:
            self.out.write("\r\x1b[2K" + line)
            self.out.flush()
            self._drawn = True
        else:
            log.info("%s", line)

    def _end_line(self) -> None:
        if self._drawn:
            self.out.write("\n")
            self.out.flush()
            self._drawn = False

    def done(self) -> None:
        self._end_line()
