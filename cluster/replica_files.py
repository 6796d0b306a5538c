"""A replica's files, read out of (or written into) its broker's container through Docker's archive API.

The brokers' log dir is /var/lib/kafka/data inside each container (cluster/config.py `log.dirs`); with the
power-loss layer it is the node's lazyfs mount bound there (cluster/powerfs.py), which the container's view reads
through, as the broker does. `get_archive` / `put_archive` work on a running and on a stopped container alike, so
a replica is read without touching its broker, and a test can rewrite a stopped broker's segment.
"""
from __future__ import annotations

import io
import tarfile

import docker.errors

from kafka_chaos.cluster.node import Node

LOG_DIR = "/var/lib/kafka/data"
KEPT = (".log", "leader-epoch-checkpoint")          # what the audit reads of a partition directory


def _archive(node: Node, path: str) -> dict[str, bytes]:
    """Every regular file under `path` in the node's container, by its path below `path`'s own name."""
    stream, _ = node.container.get_archive(path)
    buf = io.BytesIO(b"".join(stream))
    out = {}
    with tarfile.open(fileobj=buf) as tar:
        for m in tar.getmembers():
            if m.isfile():
                name = m.name.split("/", 1)[1] if "/" in m.name else m.name
                out[name] = tar.extractfile(m).read()
    return out


def read_file(node: Node, path: str) -> bytes | None:
    """One file's bytes, None where it does not exist."""
    try:
        files = _archive(node, path)
    except docker.errors.NotFound:
        return None
    return next(iter(files.values()), None)


def replica_files(node: Node, topic: str, partition: int) -> dict:
    """The segments and leader-epoch checkpoint of `topic`-`partition` on this broker (`files`, by name), and its
    log dir's replication-offset and log-start-offset checkpoints' text; `error` set where they could not be read.
    The fields of history.replicas.ReplicaFiles (the harness builds one: this layer does not import history)."""
    out = {"files": {}, "replication_checkpoint": None, "log_start_checkpoint": None, "error": None}
    try:
        files = _archive(node, f"{LOG_DIR}/{topic}-{partition}")
    except docker.errors.NotFound:
        out["error"] = f"broker {node.id} has no directory {topic}-{partition} in {LOG_DIR}"
        return out
    except (docker.errors.APIError, tarfile.TarError, OSError) as e:
        out["error"] = f"broker {node.id}: {topic}-{partition} could not be read: {e}"
        return out
    out["files"] = {n: b for n, b in files.items() if "/" not in n and n.endswith(KEPT)}
    for key, name in (("replication_checkpoint", "replication-offset-checkpoint"),
                      ("log_start_checkpoint", "log-start-offset-checkpoint")):
        try:
            data = read_file(node, f"{LOG_DIR}/{name}")
        except (docker.errors.APIError, tarfile.TarError, OSError):
            data = None
        out[key] = None if data is None else data.decode(errors="replace")
    return out


def write_file(node: Node, path: str, data: bytes) -> None:
    """Replace one file in the node's container (running or stopped), keeping its name, owner root."""
    directory, name = path.rsplit("/", 1)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    node.container.put_archive(directory, buf.getvalue())
