"""The client-errors summary beside the timeline: what librdkafka complained about during the run, and when.

Read from logs/clients.log (history/client_log.py). Lines are grouped by level, facility, broker and the message
with its numbers blanked ("Connect to ... failed: Connection refused (after 0ms ...)" and "(after 3ms ...)" are
one row), so a reader sees "FAIL on b2: Connection refused x 37, from 20.1 s to 35.4 s" next to the fault band
that caused it instead of hundreds of lines.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from kafka_chaos.history.client_log import CLIENT_LOG, read_client_log
from kafka_chaos.report.data import RunData

LEVELS = ("CRITICAL", "ERROR", "WARNING")        # the summary's rows; quieter levels are only counted
MAX_ROWS = 30
MAX_MESSAGE = 220


@dataclass
class ClientErrorRow:
    level: str
    facility: str
    broker: str
    message: str          # the first line of the group, as librdkafka wrote it
    count: int
    first_s: float        # seconds since the run's start, as on the timeline
    last_s: float
    processes: list[str] = field(default_factory=list)


@dataclass
class ClientErrors:
    present: bool                         # the run has a clients.log
    rows: list[ClientErrorRow]            # most severe first, then most frequent
    total: int                            # lines at LEVELS
    hidden_rows: int                      # groups beyond MAX_ROWS
    quieter: dict[str, int]               # level -> lines below LEVELS (info, debug)
    file: str = CLIENT_LOG


def message_shape(message: str) -> str:
    """The message with every number blanked: what stays the same from one occurrence to the next."""
    return re.sub(r"\d+", "N", message)


def client_errors(run: RunData, max_rows: int = MAX_ROWS) -> ClientErrors:
    lines = read_client_log(run.path)
    present = (run.path / CLIENT_LOG).is_file()
    groups: dict[tuple, ClientErrorRow] = {}
    quieter: dict[str, int] = {}
    start = run.start_ns
    for line in lines:
        if line.level not in LEVELS:
            quieter[line.level] = quieter.get(line.level, 0) + 1
            continue
        t = round((line.time_ns - start) / 1e9, 1)
        key = (line.level, line.facility, line.broker, message_shape(line.message))
        row = groups.get(key)
        if row is None:
            text = line.message if len(line.message) <= MAX_MESSAGE else line.message[:MAX_MESSAGE - 1] + "…"
            row = groups[key] = ClientErrorRow(line.level, line.facility, line.broker, text, 0, t, t)
        row.count += 1
        row.first_s, row.last_s = min(row.first_s, t), max(row.last_s, t)
        if line.process not in row.processes:
            row.processes.append(line.process)
    rows = sorted(groups.values(), key=lambda r: (LEVELS.index(r.level), -r.count, r.first_s))
    return ClientErrors(present=present, rows=rows[:max_rows], total=sum(r.count for r in rows),
                        hidden_rows=max(0, len(rows) - max_rows), quieter=quieter)
