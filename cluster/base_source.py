"""Where the base image's Debian comes from, decided once from the host's apt sources and the user's options.

debootstrap used to take the host's own apt mirror, which only works on Debian hosts whose sources name an http(s)
mirror. GitHub's runners are Ubuntu with `mirror+file:` sources. The choice here is a pure function of what
`read_host_apt` found, what the user asked for and whether the registry answered, so it can be tested with
Ubuntu-like sources files:

1. `--base-image IMAGE` (or KAFKA_CHAOS_BASE_IMAGE): that registry image;
2. `--debian-mirror URL` (or KAFKA_CHAOS_DEBIAN_MIRROR): debootstrap from that mirror;
3. a Debian host whose apt sources name a Debian mirror: debootstrap from it (what apt already reaches);
4. any other host: the registry image debian:12-slim if the registry answers, else debootstrap from
   http://deb.debian.org/debian.

The suite is always bookworm (Debian 12), whatever the host runs: the broker needs its openjdk-17.
"""
from __future__ import annotations

import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from kafka_chaos.base.errors import UsageError

DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_SUITE = "bookworm"                  # Debian 12, the release debian:12-slim is, with openjdk-17
DEFAULT_BASE_IMAGE = "debian:12-slim"
MIRROR_ENV, BASE_IMAGE_ENV = "KAFKA_CHAOS_DEBIAN_MIRROR", "KAFKA_CHAOS_BASE_IMAGE"
MIRROR_SCHEMES = ("http://", "https://", "file:/")
DEBOOTSTRAP, REGISTRY = "debootstrap", "registry"


@dataclass(frozen=True)
class HostApt:
    """What the host's /etc/os-release and apt sources say."""
    os_id: str                              # ID= of os-release: debian, ubuntu, ...
    codename: str                           # VERSION_CODENAME=
    uris: tuple[str, ...] = ()              # every URI of a `deb` source, in file order


@dataclass(frozen=True)
class BaseRequest:
    """The user's choice, from options or their environment variables; None: decide from the host."""
    base_image: str | None = None
    mirror: str | None = None

    @classmethod
    def from_env(cls, base_image: str | None = None, mirror: str | None = None) -> "BaseRequest":
        return cls(base_image or os.environ.get(BASE_IMAGE_ENV) or None,
                   mirror or os.environ.get(MIRROR_ENV) or None)


@dataclass(frozen=True)
class BasePlan:
    """How the base image is made: debootstrap `suite` from mirror `source`, or FROM the registry image `source`."""
    method: str
    suite: str
    source: str
    reason: str

    def describe(self) -> str:
        how = (f"debootstrap {self.suite} from {self.source}" if self.method == DEBOOTSTRAP
               else f"registry image {self.source} (+ {self.suite} packages)")
        return f"base image: {how}, because {self.reason}"


def read_host_apt(root: Path = Path("/")) -> HostApt:
    """Parse os-release and every apt sources file: one-line `.list` files and deb822 `.sources` files."""
    osr = root / "etc/os-release"
    text = osr.read_text() if osr.exists() else ""
    os_id, codename = _field(text, "ID"), _field(text, "VERSION_CODENAME")
    files = [root / "etc/apt/sources.list"]
    files += sorted((root / "etc/apt/sources.list.d").glob("*.list"))
    files += sorted((root / "etc/apt/sources.list.d").glob("*.sources"))
    uris: list[str] = []
    for f in files:
        if f.is_file():
            uris += _deb822_uris(f.read_text()) if f.suffix == ".sources" else _one_line_uris(f.read_text())
    return HostApt(os_id, codename, tuple(uris))


def _field(os_release: str, key: str) -> str:
    m = re.search(rf"^{key}=(.*)$", os_release, re.M)
    return m.group(1).strip().strip("\"'") if m else ""


def _one_line_uris(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)", text, re.M)]


def _deb822_uris(text: str) -> list[str]:
    uris = []
    for stanza in re.split(r"\n\s*\n", text):
        fields = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            key, value = line.split(":", 1)
            fields[key.strip().lower()] = value.strip()
        if "deb" in fields.get("types", "").split() and fields.get("enabled", "yes").lower() != "no":
            uris += fields.get("uris", "").split()
    return uris


def host_debian_mirror(host: HostApt) -> str | None:
    """The Debian mirror a Debian host's apt uses, if debootstrap can use it (http(s) or file:, not security)."""
    if host.os_id != "debian" or not host.codename:
        return None
    for uri in host.uris:
        if uri.startswith(MIRROR_SCHEMES) and "security" not in uri:
            return uri.rstrip("/")
    return None


def choose_base(host: HostApt, request: BaseRequest, registry_error: Callable[[str], str | None]) -> BasePlan:
    """The plan for the base image. `registry_error(image)` is asked only when the choice depends on it: None
    when the image is present or could be pulled, else why not."""
    suite = DEFAULT_SUITE           # whatever the host runs: the image needs openjdk-17, which trixie no longer has
    if request.base_image:
        return BasePlan(REGISTRY, DEFAULT_SUITE, request.base_image, "--base-image / KAFKA_CHAOS_BASE_IMAGE names it")
    if request.mirror:
        if not request.mirror.startswith(MIRROR_SCHEMES):
            raise UsageError(f"Debian mirror {request.mirror!r} is not an http(s):// or file:/ URL",
                             f"pass e.g. --debian-mirror {DEFAULT_MIRROR} (or set {MIRROR_ENV})")
        return BasePlan(DEBOOTSTRAP, suite, request.mirror.rstrip("/"),
                        "--debian-mirror / KAFKA_CHAOS_DEBIAN_MIRROR names it")
    mirror = host_debian_mirror(host)
    if mirror:
        return BasePlan(DEBOOTSTRAP, suite, mirror, f"this Debian host's apt sources name {mirror}")
    why = _why_not_host(host)
    error = registry_error(DEFAULT_BASE_IMAGE)
    if error is None:
        return BasePlan(REGISTRY, DEFAULT_SUITE, DEFAULT_BASE_IMAGE, f"{why}, and the registry answers")
    return BasePlan(DEBOOTSTRAP, DEFAULT_SUITE, DEFAULT_MIRROR,
                    f"{why}, and the registry does not answer ({error}); {MIRROR_ENV} names another mirror")


def _why_not_host(host: HostApt) -> str:
    if host.os_id != "debian":
        return f"this host is {host.os_id or 'not identified by /etc/os-release'}, not Debian"
    shown = ", ".join(host.uris[:3]) or "none"
    return f"this Debian host's apt sources name no http(s) or file: Debian mirror (they name: {shown})"


def mirror_problem(mirror: str, suite: str, timeout: float = 20) -> str | None:
    """None if the mirror serves `suite` (its Release file answers), else what went wrong: checked before a
    minute of debootstrap, so a wrong mirror fails at once with its cause."""
    url = f"{mirror.rstrip('/')}/dists/{suite}/Release"
    if url.startswith("file:"):
        return None if Path(url.removeprefix("file:")).is_file() else f"{url} does not exist"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return None if r.status == 200 and r.read(64) else f"{url} answered {r.status}"
    except urllib.error.HTTPError as e:
        return f"{url}: HTTP {e.code} {e.reason}"
    except (urllib.error.URLError, OSError) as e:
        return f"{url}: {getattr(e, 'reason', e)}"
