"""The host side of the power-loss layer: each broker's log directory on its own lazyfs mount (cluster/lazyfs.py).

The mount is made on the host before the broker's container is created and bound into it (no privileges in the
container: it sees an ordinary directory). A power cut is: the container is killed (by the fault), the lazyfs
process is killed -9 (its unsynced pages die with it), the dead mount is detached (umount -l), and a fresh lazyfs
is mounted on the same disk directory; the container's next start binds the fresh mount, since a stopped
container's mounts are gone with its mount namespace.

Layout: ROOT/<run_id>/owner (the owning pid, 0 for a cluster that outlives its process) and ROOT/<run_id>/n<id>/
{disk,mnt,pid,log}. Everything of a run goes with `remove_run` (cluster down, the reaper), of every run with
`remove_all` (`cluster down --all`), and runs whose owner died with `sweep_orphans`.
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kafka_chaos.base.errors import EnvironmentProblem
from kafka_chaos.base.processes import pid_alive
from kafka_chaos.base.waiting import wait_until
from kafka_chaos.cluster.lazyfs import FSNAME

log = logging.getLogger(__name__)

FSTYPE = f"fuse.{FSNAME}"
DATA_DIR = "/var/lib/kafka/data"          # the broker's log.dirs inside its container
CAPACITY_MB = 2048                        # the layer's size limit: what the disk-full fault fills
STATUS_LINE = "brokers' log dirs on the power-loss layer (lazyfs): unsynced writes are lost on power loss"


def root() -> Path:
    return Path(os.environ.get("KAFKA_CHAOS_LAZYFS_ROOT", "/var/tmp/kafka-chaos/lazyfs"))


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def lazyfs_mounts() -> list[str]:
    """Mount points of every lazyfs mount on this host (dead ones too: their type stays until detached)."""
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[2] == FSTYPE:
                out.append(_unescape(parts[1]))
    return out


def check_host() -> None:
    """/dev/fuse and libfuse3 must be there; a clear error otherwise."""
    if not os.path.exists("/dev/fuse"):
        raise EnvironmentProblem("the power-loss layer needs FUSE, and /dev/fuse does not exist on this host",
                                 "load the fuse module (modprobe fuse), or run scenarios without power loss")
    try:
        import ctypes.util
        if not ctypes.util.find_library("fuse3"):
            raise OSError("libfuse3 not found")
        import mfusepy  # noqa: F401
    except (ImportError, OSError) as e:
        raise EnvironmentProblem(f"the power-loss layer cannot load FUSE: {e}",
                                 "run scripts/setup.sh (it installs Debian's fuse3 and the mfusepy package)") from e


def _is_lazyfs(pid: int, mnt: Path) -> bool:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:                            # gone, or going while we read
        return False
    return b"kafka_chaos.cluster.lazyfs" in cmd and str(mnt).encode() in cmd


def _detach(mnt: Path) -> None:
    """Lazy unmount: root with umount, a user through fusermount3 (its setuid helper)."""
    if str(mnt) in lazyfs_mounts():
        cmd = ["umount", "-l"] if os.geteuid() == 0 else ["fusermount3", "-u", "-z"]
        subprocess.run([*cmd, str(mnt)], capture_output=True)


@dataclass
class PowerFS:
    """One node's lazyfs mount: `mount`, `cut` (power off: unsynced data gone), `power_cycle` (cut, mount), and
    `fill` / `free` (a ballast outside the mount takes all of the size limit: the disk is full)."""

    run_id: str
    node_id: int
    base: Path | None = None

    def __post_init__(self):
        self.base = Path(self.base or root())
        self._proc: subprocess.Popen | None = None

    @property
    def dir(self) -> Path:
        return self.base / self.run_id / f"n{self.node_id}"

    @property
    def disk(self) -> Path:
        return self.dir / "disk"

    @property
    def mnt(self) -> Path:
        return self.dir / "mnt"

    @property
    def ballast(self) -> Path:
        return self.dir / "ballast"

    def fill(self) -> int:
        """Make the disk full: a (sparse) ballast as large as the size limit. Returns the bytes it took."""
        with open(self.ballast, "wb") as f:
            f.truncate(CAPACITY_MB << 20)
        return CAPACITY_MB << 20

    def free(self) -> None:
        self.ballast.unlink(missing_ok=True)

    def _pid(self) -> int | None:
        try:
            return int((self.dir / "pid").read_text())
        except (FileNotFoundError, ValueError):
            return None

    def mounted(self) -> bool:
        pid = self._pid()
        return str(self.mnt) in lazyfs_mounts() and pid is not None and pid_alive(pid)

    def mount(self, timeout: float = 30) -> "PowerFS":
        """Mount lazyfs over the disk directory (nothing if it is mounted and alive)."""
        if self.mounted():
            return self
        self.cut()
        self.disk.mkdir(parents=True, exist_ok=True)
        self.mnt.mkdir(parents=True, exist_ok=True)
        logf = open(self.dir / "log", "ab")
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "kafka_chaos.cluster.lazyfs", str(self.disk), str(self.mnt),
                 "--capacity-mb", str(CAPACITY_MB), "--ballast", str(self.ballast)],
                stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                start_new_session=True)   # a Ctrl-C to the harness must not take the disk away under the broker
        finally:
            logf.close()
        (self.dir / "pid").write_text(str(self._proc.pid))

        def up():
            if self._proc.poll() is not None:
                raise EnvironmentProblem(f"lazyfs for node {self.node_id} exited at once: "
                                         f"{(self.dir / 'log').read_text()[-800:]}",
                                         "check that /dev/fuse works: ls /tmp with a FUSE mount, or run without "
                                         "the power-loss layer")
            return str(self.mnt) in lazyfs_mounts()
        wait_until(up, timeout, f"lazyfs for node {self.node_id} not mounted on {self.mnt} after {timeout:.0f} s")
        return self

    def cut(self) -> None:
        """Power off the disk: kill -9 the lazyfs process (its unsynced pages are gone), detach the mount."""
        pid = self._pid()
        ours = pid is not None and pid_alive(pid) and _is_lazyfs(pid, self.mnt)
        if ours:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:         # it went by itself in between
                pass
        if self._proc is not None:
            self._proc.wait(timeout=30)
            self._proc = None
        elif ours:                             # started by another PowerFS (another thread or process)
            wait_until(lambda: not pid_alive(pid), 30, f"lazyfs process {pid} did not die")
        (self.dir / "pid").unlink(missing_ok=True)   # a later cut must not chase this pid (it may be reused)
        _detach(self.mnt)

    def power_cycle(self) -> None:
        self.cut()
        self.mount()


def prepare_run(run_id: str, owner_pid: int, base: Path | None = None) -> Path:
    """The run's directory with its owner's pid (0: a cluster meant to outlive its process)."""
    d = Path(base or root()) / run_id
    d.mkdir(parents=True, exist_ok=True)
    (d / "owner").write_text(str(owner_pid))
    return d


def remove_run(run_id: str, base: Path | None = None) -> int:
    """Cut and remove every mount of a run and its directory. Returns the mounts removed."""
    d = Path(base or root()) / run_id
    n = 0
    for node in sorted(d.glob("n*")) if d.is_dir() else []:
        try:
            PowerFS(run_id, int(node.name[1:]), base).cut()
            n += 1
        except (ValueError, OSError) as e:
            log.warning("lazyfs %s: %s", node, e)
    for mnt in lazyfs_mounts():              # a mount whose directory a crash cut short
        if mnt.startswith(str(d) + "/"):
            _detach(Path(mnt))
    if d.is_dir():
        shutil.rmtree(d, ignore_errors=True)
    return n


def runs(base: Path | None = None) -> list[str]:
    b = Path(base or root())
    return sorted(p.name for p in b.iterdir() if p.is_dir()) if b.is_dir() else []


def remove_all(base: Path | None = None) -> int:
    n = sum(remove_run(r, base) for r in runs(base))
    b = str(Path(base or root()))
    for mnt in lazyfs_mounts():
        if mnt.startswith(b + "/"):
            _detach(Path(mnt))
    return n


def sweep_orphans(base: Path | None = None) -> int:
    """Remove the mounts of runs whose owning process is gone (a crash the reaper missed)."""
    n = 0
    for r in runs(base):
        try:
            owner = int((Path(base or root()) / r / "owner").read_text())
        except (FileNotFoundError, ValueError):
            owner = -1                         # half-made: no owner recorded
        if owner == 0 or (owner > 0 and pid_alive(owner)):
            continue
        if owner < 0 and time.time() - (Path(base or root()) / r).stat().st_mtime < 120:
            continue                           # perhaps being made right now
        n += remove_run(r, base)
    return n
