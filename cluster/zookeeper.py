"""What ZooKeeper says about a ZooKeeper-mode cluster: which broker is the controller.

The controller is the broker whose session holds the ephemeral /controller znode (KafkaController.elect writes it,
KafkaZkClient.registerControllerAndIncrementControllerEpoch). ZooKeeper's `dump` four-letter word lists every
session with its ephemeral znodes, and a broker registers /brokers/ids/N under the same session: the broker id
sharing /controller's session is the controller. One TCP exchange, no ZooKeeper client library, and it answers
for ZooKeeper 3.4 to 3.8 alike.
"""
from __future__ import annotations

import re
import socket

from kafka_chaos.cluster.config import ZOOKEEPER_PORT

_SESSION = re.compile(r"^(0x[0-9a-fA-F]+):\s*$")


def four_letter(ip: str, word: str, timeout: float = 2.0) -> str:
    """Send a four-letter word to ZooKeeper at `ip` and return its whole answer (OSError if it does not answer)."""
    with socket.create_connection((ip, ZOOKEEPER_PORT), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(word.encode())
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def ephemerals(dump: str) -> dict[str, list[str]]:
    """session id -> its ephemeral znodes, from the 'Sessions with Ephemerals' part of a `dump` answer."""
    out: dict[str, list[str]] = {}
    current = None
    in_section = False
    for line in dump.splitlines():
        if line.startswith("Sessions with Ephemerals"):
            in_section = True
            continue
        if not in_section:
            continue
        if line.startswith("Connections dump"):
            break
        if m := _SESSION.match(line.strip()):
            current = m.group(1)
            out[current] = []
        elif line.strip().startswith("/") and current is not None:
            out[current].append(line.strip())
    return out


def controller_from_dump(dump: str) -> int | None:
    """The id of the broker whose session holds /controller; None when no session does (an election is on)."""
    for paths in ephemerals(dump).values():
        if "/controller" in paths:
            ids = [int(p.rsplit("/", 1)[1]) for p in paths if re.fullmatch(r"/brokers/ids/\d+", p)]
            return ids[0] if ids else None
    return None


def registered_brokers(dump: str) -> list[int]:
    """The broker ids registered in ZooKeeper now (their ephemeral /brokers/ids/N znodes)."""
    return sorted(int(p.rsplit("/", 1)[1]) for paths in ephemerals(dump).values() for p in paths
                  if re.fullmatch(r"/brokers/ids/\d+", p))
