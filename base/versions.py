"""Kafka release versions, parsed in one place: "4.4.0" -> (4, 4, 0). A suffix ("3.9.2-rc1") is ignored."""
from __future__ import annotations

import re

NEWEST_KNOWN_KAFKA = "4.4.0"     # the default; cluster.distribution falls back to an older one Central serves whole
ELR_DEFAULT_FROM = (4, 1)        # KIP-966: new clusters have eligible leader replicas on from this release
KRAFT_FROM = (3, 9)              # KRaft as this harness runs it (unclean election honoured from 3.9, KAFKA-12670)
ZOOKEEPER_BEFORE = (4, 0)        # ZooKeeper mode was removed in 4.0 (KIP-833)
KRAFT, ZOOKEEPER = "kraft", "zookeeper"
METADATA_MODES = (KRAFT, ZOOKEEPER)
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?(?:-[\w.]+)?")


def version_tuple(version: str) -> tuple[int, ...]:
    """(major, minor, patch); ValueError for text that is no version. Callers turn it into their own error."""
    m = _VERSION.fullmatch(str(version or "").strip())
    if not m:
        raise ValueError(f"{version!r} is not a Kafka version like 4.4.0")
    return tuple(int(x) for x in m.groups(default="0"))


def at_least(version: str, floor: tuple[int, ...]) -> bool:
    return version_tuple(version) >= floor


def metadata_modes(version: str) -> tuple[str, ...]:
    """The metadata modes release `version` runs here, the default first: KRaft where it has it, else ZooKeeper."""
    v = version_tuple(version)
    modes = ((KRAFT,) if v >= KRAFT_FROM else ()) + ((ZOOKEEPER,) if v < ZOOKEEPER_BEFORE else ())
    return modes
