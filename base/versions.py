"""Kafka release versions, parsed in one place: "4.4.0" -> (4, 4, 0). A suffix ("3.9.2-rc1") is ignored."""
from __future__ import annotations

import re

NEWEST_KNOWN_KAFKA = "4.4.0"     # the default; cluster.distribution falls back to an older one Central serves whole
ELR_DEFAULT_FROM = (4, 1)        # KIP-966: new clusters have eligible leader replicas on from this release
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?(?:-[\w.]+)?")


def version_tuple(version: str) -> tuple[int, ...]:
    """(major, minor, patch); ValueError for text that is no version. Callers turn it into their own error."""
    m = _VERSION.fullmatch(str(version or "").strip())
    if not m:
        raise ValueError(f"{version!r} is not a Kafka version like 4.4.0")
    return tuple(int(x) for x in m.groups(default="0"))


def at_least(version: str, floor: tuple[int, ...]) -> bool:
    return version_tuple(version) >= floor
