"""Names and paths safe for a shared results root (a bucket many runners write into): one rule for the house.

A run id (and a suite's name) is one path segment of letters, digits, '.', '_' and '-', starting with a letter or
digit, at most 128 characters: no '/', no '..', no spaces or control characters, nothing a shell, a URL or an object
key would read differently. `within(root, path)` says whether a path stays inside a root once symlinks and '..' are
resolved; `child(root, name)` joins a validated name onto a root and refuses anything that would leave it.
An object-store prefix is checked by `key_prefix`: segments by the same rule, joined by '/'.
"""
from __future__ import annotations

import re
from pathlib import Path

from kafka_chaos.base.errors import UsageError

RUN_ID_MAX = 128
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
RUN_ID_RULE = (f"a run id is 1-{RUN_ID_MAX} letters, digits, '.', '_' or '-', starting with a letter or digit "
               "(no '/', no '..')")


def is_run_id(name: str) -> bool:
    return (isinstance(name, str) and 0 < len(name) <= RUN_ID_MAX and _RUN_ID.fullmatch(name) is not None
            and ".." not in name)


def check_run_id(name: str, what: str = "run id") -> str:
    """`name` if it is a valid run id, else UsageError (exit 2) with the rule."""
    if not is_run_id(name):
        raise UsageError(f"{what} {name!r} is not allowed: {RUN_ID_RULE}",
                         f"choose a {what} like 20261127T180034-leader-kill-s101")
    return name


def within(root: Path | str, path: Path | str) -> Path | None:
    """`path` resolved (symlinks followed) if it is `root` or below it, else None."""
    root_r, path_r = Path(root).resolve(), Path(path).resolve()
    return path_r if path_r == root_r or root_r in path_r.parents else None


def child(root: Path | str, *names: str) -> Path:
    """root/name/...: every name a valid run id (one segment), the result inside root; UsageError otherwise."""
    for name in names:
        check_run_id(name, "name")
    path = Path(root).joinpath(*names)
    if within(root, path) is None:
        raise UsageError(f"{path} leads out of {root} (a symlink?)", f"remove the link, or pick a name under {root}")
    return path


def key_prefix(prefix: str) -> str:
    """An object-store prefix, normalised to no leading or trailing '/': each segment a valid name (UsageError
    otherwise), so a key built on it cannot climb out of it."""
    segments = [s for s in prefix.strip("/").split("/")] if prefix.strip("/") else []
    for s in segments:
        if not is_run_id(s):
            raise UsageError(f"prefix {prefix!r}: segment {s!r} is not allowed ({RUN_ID_RULE})",
                             "use a prefix of plain segments, e.g. nightly/2026-11-27")
    return "/".join(segments)
