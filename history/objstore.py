"""Results roots on S3-compatible object storage: `s3://bucket/prefix`, read and written through pyarrow's S3
filesystem (the AWS SDK for C++ underneath), so credentials come only from the standard AWS chain (environment,
shared profile, instance role) and are never passed, stored or printed by kafka-chaos.

The endpoint of a server that is not AWS: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (the SDKs' own variables);
region: AWS_REGION or AWS_DEFAULT_REGION (default us-east-1).

A run is uploaded file by file under prefix/<run_id>/, then its completion marker, `complete.json` (the files and
their sizes), is written last: a reader takes a run as complete only when the marker is there and every file it names
is, so a run whose upload was cut (kill -9) is never read as complete. Every key is built from validated segments
(base/names.py) under the given prefix, and listings are of that prefix only (never the bucket, never above it).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from kafka_chaos.base.errors import EnvironmentProblem, UsageError
from kafka_chaos.base.names import check_run_id, is_run_id, key_prefix, within

SCHEME = "s3://"
MARKER = "complete.json"
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def is_s3(location) -> bool:
    return str(location).startswith(SCHEME)


@dataclass(frozen=True)
class S3Root:
    """s3://bucket/prefix: a results root (or one run: its last segment a run id) in a bucket."""

    bucket: str
    prefix: str = ""

    @classmethod
    def parse(cls, url: str) -> "S3Root":
        parsed = urlparse(str(url))
        if parsed.scheme != "s3" or not parsed.netloc:
            raise UsageError(f"{url!r} is not an s3://bucket/prefix URL", "write it as s3://bucket/prefix")
        if not _BUCKET.fullmatch(parsed.netloc) or ".." in parsed.netloc:
            raise UsageError(f"{url!r}: bucket {parsed.netloc!r} is not a valid bucket name",
                             "3-63 lowercase letters, digits, '.' or '-'")
        if parsed.query or parsed.fragment or parsed.params:
            raise UsageError(f"{url!r}: no ?query or #fragment in a results location", "write s3://bucket/prefix")
        return cls(parsed.netloc, key_prefix(parsed.path))

    @property
    def url(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}".rstrip("/")

    def key(self, *parts: str) -> str:
        """bucket/prefix/part/...: each part one or more '/'-joined valid segments."""
        segments = [s for p in parts for s in p.split("/")]
        for s in segments:
            if not is_run_id(s) and s != MARKER:
                raise UsageError(f"{self.url}: key segment {s!r} is not allowed", "use plain names under the prefix")
        return "/".join([self.bucket, *([self.prefix] if self.prefix else []), *segments])

    def child(self, name: str) -> "S3Root":
        check_run_id(name)
        return S3Root(self.bucket, f"{self.prefix}/{name}".strip("/"))

    @property
    def name(self) -> str:
        return self.prefix.rsplit("/", 1)[-1] if self.prefix else self.bucket


def filesystem():
    """pyarrow's S3 filesystem on the standard AWS chain; the endpoint and region from the SDKs' variables."""
    from pyarrow import fs

    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    kwargs: dict = {"region": os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"}
    if endpoint:
        parsed = urlparse(endpoint)
        kwargs.update(endpoint_override=parsed.netloc or parsed.path, scheme=parsed.scheme or "https")
    return fs.S3FileSystem(**kwargs)


def _wrap(what: str, root: S3Root, e: Exception) -> EnvironmentProblem:
    return EnvironmentProblem(
        f"{what} {root.url}: {e}",
        "check the bucket exists and the standard AWS chain has credentials for it (AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE); for a server that is not AWS set AWS_ENDPOINT_URL")


def read_bytes(root: S3Root, *parts: str, fs=None) -> bytes | None:
    """The object's bytes, or None if it does not exist."""
    from pyarrow import fs as pafs

    fs = fs or filesystem()
    key = root.key(*parts)
    try:
        if fs.get_file_info(key).type != pafs.FileType.File:
            return None
        with fs.open_input_stream(key) as f:
            return f.read()
    except OSError as e:
        raise _wrap("reading", root, e) from None


def write_bytes(root: S3Root, data: bytes, *parts: str, fs=None) -> str:
    fs = fs or filesystem()
    key = root.key(*parts)
    try:
        with fs.open_output_stream(key) as f:
            f.write(data)
    except OSError as e:
        raise _wrap("writing", root, e) from None
    return key


def check_reachable(root: S3Root, fs=None) -> None:
    """EnvironmentProblem (exit 2) unless the bucket exists and the credentials may list the prefix."""
    from pyarrow import fs as pafs

    fs = fs or filesystem()
    try:
        found = fs.get_file_info(root.bucket).type == pafs.FileType.Directory
    except OSError as e:
        raise _wrap("reaching", root, e) from None
    if not found:
        raise _wrap("reaching", root, FileNotFoundError(f"bucket {root.bucket!r} does not exist"))
    list_names(root, fs=fs)


def list_names(root: S3Root, fs=None) -> list[str]:
    """The names directly under the prefix (one level, never above or beyond it), sorted."""
    from pyarrow import fs as pafs

    fs = fs or filesystem()
    base = root.key()
    try:
        infos = fs.get_file_info(pafs.FileSelector(base, recursive=False, allow_not_found=True))
    except OSError as e:
        raise _wrap("listing", root, e) from None
    names = [i.path[len(base):].strip("/") for i in infos if i.type == pafs.FileType.Directory
             and i.path.startswith(base + "/")]
    return sorted(n for n in names if is_run_id(n))


def marker(root: S3Root, run_id: str, fs=None) -> dict | None:
    """The run's completion marker, or None: a run without one is not complete (being uploaded, or cut)."""
    raw = read_bytes(root, run_id, MARKER, fs=fs)
    try:
        value = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    return value if isinstance(value, dict) and isinstance(value.get("files"), dict) else None


def local_files(run_dir: Path) -> dict[str, int]:
    """A run's files, relative path -> size; symlinks that lead out of the run and odd names are left out."""
    out = {}
    for path in sorted(Path(run_dir).rglob("*")):
        if not path.is_file() or within(run_dir, path) is None:
            continue
        rel = path.relative_to(run_dir).as_posix()
        if all(is_run_id(s) for s in rel.split("/")) and rel != MARKER:
            out[rel] = path.stat().st_size
    return out


def upload_run(run_dir: Path, root: S3Root, *, replace: bool = False, fs=None) -> dict:
    """Uploads results/<run_id>/ to prefix/<run_id>/, the marker last; returns the marker. A run already complete
    in the bucket is refused unless `replace` (a shared bucket: never overwrite another runner's run by chance)."""
    fs = fs or filesystem()
    run_dir = Path(run_dir)
    run_id = check_run_id(run_dir.name)
    if marker(root, run_id, fs=fs) is not None:
        if not replace:
            raise UsageError(f"{root.url}/{run_id} is already a complete run", "pick another run id or prefix")
        fs.delete_file(root.key(run_id, MARKER))     # incomplete while it is rewritten
    files = local_files(run_dir)
    for rel in files:
        try:
            with open(run_dir / rel, "rb") as src, fs.open_output_stream(root.key(run_id, rel)) as out:
                while chunk := src.read(8 << 20):
                    out.write(chunk)
        except OSError as e:
            raise _wrap("uploading to", root, e) from None
    done = {"run_id": run_id, "files": files,
            "completed": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    write_bytes(root, json.dumps(done, indent=1).encode(), run_id, MARKER, fs=fs)
    return done


def download_run(root: S3Root, run_id: str, dest: Path, fs=None, skip: tuple[str, ...] = ()) -> Path:
    """prefix/<run_id>/ into dest/<run_id>/, exactly the files its marker names (nothing listed beyond it) but those
    under a folder in `skip` (e.g. history/journal: a check reads the Parquet files built from it). UsageError if
    the run is not complete."""
    fs = fs or filesystem()
    done = marker(root, check_run_id(run_id), fs=fs)
    if done is None:
        raise UsageError(f"{root.url}/{run_id} is not a complete run (no {MARKER}: still uploading, or cut short)",
                         "wait for its upload to finish, or upload it again")
    target = Path(dest) / run_id
    for rel, size in done["files"].items():
        if any(rel.startswith(folder.rstrip("/") + "/") for folder in skip):
            continue
        data = read_bytes(root, run_id, rel, fs=fs)
        if data is None or len(data) != size:
            raise UsageError(f"{root.url}/{run_id}/{rel}: missing or of another size than its marker says",
                             "upload the run again")
        path = target / rel
        if within(target, path) is None:
            raise UsageError(f"{root.url}/{run_id}: {rel!r} leads out of the run", "upload the run again")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    _STAGED_AT[str(target.resolve())] = time.time() + 1e-3
    return target


def location(value) -> str | None:
    """The s3:// URL of a results location given on the command line, or None for a local path. argparse's Path
    type folds "s3://b/p" into "s3:/b/p"; both spellings are taken."""
    text = str(value)
    if text.startswith(SCHEME):
        return text
    if text.startswith("s3:/"):
        return SCHEME + text[len("s3:/"):]
    return None


def stage(url: str, workdir: Path, fs=None, skip: tuple[str, ...] = ()) -> tuple[S3Root, list[tuple[str, Path]],
                                                                              list[str]]:
    """Downloads the complete runs at `url` (one run, or every run directly under a root) into workdir; returns the
    root they live in, (run id, local dir) pairs, and the run ids skipped as not complete."""
    fs = fs or filesystem()
    root = S3Root.parse(url)
    if root.prefix:
        parent = S3Root(root.bucket, root.prefix.rpartition("/")[0])
        if marker(parent, root.name, fs=fs) is not None:
            return parent, [(root.name, download_run(parent, root.name, workdir, fs=fs, skip=skip))], []
    staged, skipped = [], []
    for name in list_names(root, fs=fs):
        if marker(root, name, fs=fs) is None:
            skipped.append(name)
        else:
            staged.append((name, download_run(root, name, workdir, fs=fs, skip=skip)))
    if not staged:
        raise UsageError(f"{url}: no complete run there" + (f" ({len(skipped)} not complete)" if skipped else ""),
                         "give s3://bucket/prefix of a results root, or of one uploaded run")
    return root, staged, skipped


def publish(root: S3Root, run_dir: Path, fs=None) -> list[str]:
    """Uploads what a check or report added or changed in a staged run (verdict.json, report.html, ...), then its
    marker again, last; returns the files uploaded."""
    fs = fs or filesystem()
    run_id = check_run_id(Path(run_dir).name)
    before = (marker(root, run_id, fs=fs) or {}).get("files", {})
    now = local_files(run_dir)
    changed = [rel for rel, size in now.items() if before.get(rel) != size
               or (Path(run_dir) / rel).stat().st_mtime > _STAGED_AT.get(str(Path(run_dir).resolve()), 0)]
    if not changed:
        return []
    fs.delete_file(root.key(run_id, MARKER))
    for rel in changed:
        write_bytes(root, (Path(run_dir) / rel).read_bytes(), run_id, rel, fs=fs)
    done = {"run_id": run_id, "files": dict(sorted((before | now).items())),    # what was not staged stays listed
            "completed": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    write_bytes(root, json.dumps(done, indent=1).encode(), run_id, MARKER, fs=fs)
    return changed


_STAGED_AT: dict[str, float] = {}     # staged run dir -> when it was downloaded (publish uploads what changed since)


class Staged:
    """`with Staged(paths) as local:` the s3:// locations among `paths` downloaded (complete runs only) and replaced
    by their local copies; on leaving, what was added or changed is uploaded (markers last) and the copies removed."""

    def __init__(self, paths: list[str], skip: tuple[str, ...] = ()):
        self.paths, self.skip = [str(p) for p in paths], skip     # skip: folders of each run left in the bucket
        self.runs: list[tuple[S3Root, Path]] = []
        self.roots: list[tuple[S3Root, Path]] = []     # each location and its local root (a check's verdicts.parquet)
        self.skipped: list[str] = []
        self._dir: Path | None = None
        self._fs = None

    def __enter__(self) -> list[str]:
        import tempfile

        local = []
        for p in self.paths:
            url = location(p)
            if url is None:
                local.append(p)
                continue
            if self._dir is None:
                self._fs, self._dir = filesystem(), Path(tempfile.mkdtemp(prefix="kafka-chaos-s3-"))
            where = self._dir / f"{len(self.roots)}"
            root, staged, skipped = stage(url, where, fs=self._fs, skip=self.skip)
            self.roots.append((root, where))
            self.runs += [(root, d) for _, d in staged]
            self.skipped += [f"{root.url}/{s}" for s in skipped]
            local += [str(d) for _, d in staged]
        return local

    def sources(self) -> dict[str, str]:
        """{local copy (resolved): the run's s3:// URL} of every staged run."""
        return {str(run_dir.resolve()): f"{root.url}/{run_dir.name}" for root, run_dir in self.runs}

    def publish(self) -> list[str]:
        """Uploads what changed in every staged run; returns the s3:// URLs of the files uploaded."""
        out = []
        for root, run_dir in self.runs:
            out += [f"{root.url}/{run_dir.name}/{rel}" for rel in publish(root, run_dir, fs=self._fs)]
        for root, where in self.roots:           # what was written beside the runs, e.g. the verdicts table
            for file in sorted(where.iterdir()) if where.is_dir() else ():
                if file.is_file() and is_run_id(file.name):
                    write_bytes(root, file.read_bytes(), file.name, fs=self._fs)
                    out.append(f"{root.url}/{file.name}")
        return out

    def __exit__(self, *exc) -> None:
        import shutil
        import sys

        try:
            if self.runs:
                for url in self.publish():
                    print(f"uploaded: {url}", file=sys.stderr)
        finally:
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
