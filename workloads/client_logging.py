"""Where a workload client's librdkafka log goes: results/<run_id>/logs/clients.log, never the terminal.

Every client the workload makes (producers, live consumers, the final drain) takes `client_logging(...)` into its
config: librdkafka then hands its lines to a Python logger that appends them to the run's clients.log
(history/client_log.py), served on the client's own poll()/consume()/flush() calls.
"""
from __future__ import annotations

import os

from kafka_chaos.history.client_log import client_logger

LOG_LEVEL = 6   # syslog levels: errors, warnings, notices and info; never debug unless asked for


def client_debug() -> dict:
    """KAFKA_CHAOS_CLIENT_DEBUG=eos,msg turns on librdkafka's debug contexts in the workload's clients; their lines
    go to clients.log like the rest. For finding out what the client did (e.g. an idempotent producer's epoch
    bumps), not for runs whose speed matters."""
    contexts = os.environ.get("KAFKA_CHAOS_CLIENT_DEBUG", "").strip()
    return {"debug": contexts, "log_level": 7} if contexts else {}


def client_logging(log_path: str | None, process: str, idempotent: bool = False) -> dict:
    """Client settings that send librdkafka's log to `log_path` (None: nowhere) as process `process`. An
    idempotent producer also logs librdkafka's `eos` debug context: its epoch bumps are debug lines only
    (rdkafka_idempotence.c, rd_kafka_idemp_drain_epoch_bump0: "Beginning partition drain ... epoch bump"), and the
    checker needs them to tell a client-side bump from a broken promise (history/client_log.py, epoch_bumps).
    The context is quiet: it logs at start-up, on errors and on bumps, never per message."""
    contexts = [c for c in client_debug().get("debug", "").split(",") if c] + (["eos"] if idempotent else [])
    debug = {"debug": ",".join(dict.fromkeys(contexts)), "log_level": 7} if contexts else {}
    return {"logger": client_logger(log_path, process), "log_level": LOG_LEVEL} | debug
