"""A FUSE layer that keeps writes nobody fsync'ed apart, so a power loss can drop exactly those (Jepsen's lazyfs idea).

The backing directory is the disk; this process's memory is the page cache. Data writes land in per-file dirty
pages here and reach the backing file only on fsync (Kafka's flush) or when the emulated kernel writeback finds the
file dirty for longer than `dirty_expire` (Linux's flusher: it wakes every dirty_writeback_centisecs and writes back
inodes first dirtied over dirty_expire_centisecs ago, whole; fs/fs-writeback.c wb_kupdate, `inode->dirtied_when`;
Documentation/admin-guide/sysctl/vm.rst). Metadata (create, rename, unlink, truncate, mkdir) goes to the disk at
once. A power loss is then: kill the node, kill -9 this process (its dirty pages vanish with it), mount a fresh
one. The kernel's own FUSE page cache goes with the old mount, so nothing stale survives.

Run as `python -m kafka_chaos.cluster.lazyfs BACKING MOUNTPOINT` (foreground; the host side is cluster/powerfs.py).
Built on mfusepy (ctypes bindings of Debian's libfuse3; no compiler needed).
"""
from __future__ import annotations

import argparse
import errno
import os
import threading
import time
from dataclasses import dataclass, field

os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")   # mfusepy would take a libfuse2 first if one is installed

PAGE = 4096
FSNAME = "kafka-chaos-lazyfs"


@dataclass
class Dirty:
    """One file's unsynced state: its size as the writer sees it and its dirty pages (index -> 4 KiB)."""
    size: int
    dirtied_ns: int
    pages: dict[int, bytearray] = field(default_factory=dict)


class Space:
    """A size limit: `capacity` bytes, of which the disk directory's files and a ballast file (outside the mount:
    the disk-full fault's, which the broker cannot see or delete) take their share. Full: no write may grow a file."""

    def __init__(self, disk: str, capacity: int, ballast: str | None):
        self.disk, self.capacity, self.ballast = disk, capacity, ballast
        self.used = 0
        self.refresh()

    def refresh(self) -> None:
        """What the disk's files take (allocated blocks), recounted by the flusher thread."""
        total = 0
        for top, _dirs, files in os.walk(self.disk):
            for f in files:
                try:
                    total += os.lstat(os.path.join(top, f)).st_blocks * 512
                except FileNotFoundError:
                    pass
        self.used = total

    def ballast_bytes(self) -> int:
        try:
            return os.stat(self.ballast).st_size if self.ballast else 0
        except FileNotFoundError:
            return 0

    def free(self) -> int:
        return max(0, self.capacity - self.used - self.ballast_bytes())


class PageCache:
    """Dirty pages per backing inode; `sync` writes them to the backing file. Every method holds the lock."""

    def __init__(self, fsync_disk: bool = True, space: Space | None = None):
        self.lock = threading.RLock()
        self.files: dict[int, Dirty] = {}
        self.fsync_disk = fsync_disk          # fdatasync the backing file too: the throughput cost is real
        self.space = space

    def size(self, ino: int, disk_size: int) -> int:
        d = self.files.get(ino)
        return d.size if d else disk_size

    def read(self, fd: int, ino: int, size: int, offset: int) -> bytes:
        with self.lock:
            d = self.files.get(ino)
            data = os.pread(fd, size, offset)
            if d is None:
                return data
            end = min(offset + size, d.size)
            if end <= offset:
                return b""
            buf = bytearray(data[: end - offset].ljust(end - offset, b"\0"))
            for idx in range(offset // PAGE, (end - 1) // PAGE + 1):
                page = d.pages.get(idx)
                if page is None:
                    continue
                lo, hi = max(offset, idx * PAGE), min(end, (idx + 1) * PAGE)
                buf[lo - offset: hi - offset] = page[lo - idx * PAGE: hi - idx * PAGE]
            return bytes(buf)

    def write(self, fd: int, ino: int, data: bytes, offset: int) -> int:
        with self.lock:
            d = self.files.get(ino)
            end = offset + len(data)
            if self.space is not None and end > (d.size if d else os.fstat(fd).st_size) \
                    and self.space.free() < end - (d.size if d else os.fstat(fd).st_size):
                raise OSError(errno.ENOSPC, "no space left on device")   # a full disk: no file may grow
            if d is None:
                d = self.files[ino] = Dirty(os.fstat(fd).st_size, time.monotonic_ns())
            for idx in range(offset // PAGE, (end - 1) // PAGE + 1 if data else offset // PAGE):
                page = d.pages.get(idx)
                if page is None:
                    page = d.pages[idx] = self._page_from_disk(fd, idx, d.size)
                lo, hi = max(offset, idx * PAGE), min(end, (idx + 1) * PAGE)
                page[lo - idx * PAGE: hi - idx * PAGE] = data[lo - offset: hi - offset]
            d.size = max(d.size, end)
            return len(data)

    @staticmethod
    def _page_from_disk(fd: int, idx: int, size: int) -> bytearray:
        """The page as the writer sees it before this write: the disk's bytes up to the file's size, zeros after."""
        want = max(0, min(PAGE, size - idx * PAGE))
        return bytearray(os.pread(fd, want, idx * PAGE).ljust(PAGE, b"\0")[:want].ljust(PAGE, b"\0"))

    def truncate(self, fd: int, ino: int, length: int) -> None:
        """A size change is metadata: it reaches the disk at once; dirty pages past it go."""
        with self.lock:
            os.ftruncate(fd, length)
            d = self.files.get(ino)
            if d is None:
                return
            for idx in [i for i in d.pages if i * PAGE >= length]:
                del d.pages[idx]
            last = d.pages.get(length // PAGE)
            if last is not None:
                last[length % PAGE:] = bytes(PAGE - length % PAGE)
            d.size = length

    def sync(self, fd: int, ino: int) -> None:
        """fsync: the file's dirty pages and size onto the disk."""
        with self.lock:
            d = self.files.pop(ino, None)
            if d is None:
                return
            for idx, page in sorted(d.pages.items()):
                n = max(0, min(PAGE, d.size - idx * PAGE))
                if n:
                    os.pwrite(fd, bytes(page[:n]), idx * PAGE)
            if os.fstat(fd).st_size != d.size:
                os.ftruncate(fd, d.size)
            if self.fsync_disk:
                os.fdatasync(fd)

    def forget(self, ino: int) -> None:
        with self.lock:
            self.files.pop(ino, None)

    def expired(self, older_than_ns: int) -> list[int]:
        with self.lock:
            now = time.monotonic_ns()
            return [ino for ino, d in self.files.items() if now - d.dirtied_ns >= older_than_ns]


class LazyFS:
    """The FUSE operations: a passthrough of `root` whose data writes go through a PageCache."""

    use_ns = True                          # mfusepy: utimens gets nanoseconds

    def __init__(self, root: str, cache: PageCache):
        self.root, self.cache = root, cache
        self.fds: dict[int, int] = {}          # fh -> backing fd (the fh is the backing fd itself)
        self.paths: dict[int, str] = {}        # backing inode -> a backing path of an open file (for writeback)

    def _p(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def _ino(self, fd: int) -> int:
        return os.fstat(fd).st_ino

    # -- metadata, straight to the disk -------------------------------------------------------------------------
    def getattr(self, path, fh=None):
        """The disk's attributes with the size the writer sees. Under the cache's lock: a writeback between reading
        the disk's size and looking for dirty pages would answer the disk's old size for a file now clean, and the
        kernel, told the file shrank, would end reads there. Seen on 2026-11-27: a broker that no fault touched
        read its metadata log through a size cut back to before its last writes (KafkaRaftLog.read: "Unexpected
        EOF while attempting to read the next batch") and halted, during a leader-power-loss run."""
        with self.cache.lock:
            st = os.fstat(fh) if fh is not None and fh in self.fds else os.lstat(self._p(path))
            size = self.cache.size(st.st_ino, st.st_size)
        attrs = {k: getattr(st, k) for k in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_ino")}
        attrs |= {"st_atime": st.st_atime_ns, "st_mtime": st.st_mtime_ns, "st_ctime": st.st_ctime_ns}
        attrs["st_size"] = size
        attrs["st_blocks"] = (attrs["st_size"] + 511) // 512
        return attrs

    def readdir(self, path, fh):
        """With use_ino, each entry needs its inode: libc skips a directory entry whose d_ino is 0."""
        here = os.lstat(self._p(path))
        out = [(".", {"st_mode": here.st_mode, "st_ino": here.st_ino}, 0), ("..", {"st_mode": here.st_mode,
               "st_ino": here.st_ino}, 0)]
        with os.scandir(self._p(path)) as it:
            for e in it:
                st = e.stat(follow_symlinks=False)
                out.append((e.name, {"st_mode": st.st_mode, "st_ino": st.st_ino}, 0))
        return out

    def mkdir(self, path, mode):
        return os.mkdir(self._p(path), mode)

    def rmdir(self, path):
        return os.rmdir(self._p(path))

    def _forget_if_last(self, p: str) -> None:
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            return
        if st.st_nlink <= 1:
            self.cache.forget(st.st_ino)

    def unlink(self, path):
        with self.cache.lock:
            self._forget_if_last(self._p(path))
            return os.unlink(self._p(path))

    def rename(self, old, new):
        with self.cache.lock:
            self._forget_if_last(self._p(new))
            os.rename(self._p(old), self._p(new))
            src, dst = self._p(old), self._p(new)
            for ino, p in list(self.paths.items()):        # the flusher finds a renamed file (or dir's files)
                if p == src or p.startswith(src + "/"):
                    self.paths[ino] = dst + p[len(src):]

    def link(self, target, source):
        return os.link(self._p(source), self._p(target))

    def symlink(self, target, source):
        return os.symlink(source, self._p(target))

    def readlink(self, path):
        return os.readlink(self._p(path))

    def chmod(self, path, mode):
        return os.chmod(self._p(path), mode)

    def chown(self, path, uid, gid):
        return os.chown(self._p(path), uid, gid)

    def utimens(self, path, times=None):
        return os.utime(self._p(path), ns=times) if times else os.utime(self._p(path))

    def statfs(self, path):
        sv = os.statvfs(self._p(path))
        out = {k: getattr(sv, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree",
                                           "f_files", "f_flag", "f_frsize", "f_namemax")}
        space = self.cache.space
        if space is not None:                      # the size limit, as `df` and Kafka's usable space see it
            out["f_blocks"] = space.capacity // sv.f_frsize
            out["f_bfree"] = out["f_bavail"] = space.free() // sv.f_frsize
        return out

    def access(self, path, amode):
        if not os.access(self._p(path), amode):
            raise OSError(errno.EACCES, "permission denied")
        return 0

    # -- files ----------------------------------------------------------------------------------------------
    def _opened(self, fd: int, p: str, trunc: bool) -> int:
        ino = self._ino(fd)
        if trunc:                            # O_TRUNC (the kernel passes it on open: atomic_o_trunc) is metadata
            self.cache.truncate(fd, ino, 0)
        self.fds[fd] = ino
        self.paths[ino] = p
        return fd

    def open(self, path, flags):
        p = self._p(path)
        # Read-write whatever was asked (a dirty page is filled from the disk; fsync needs a writable fd), never
        # O_APPEND: the kernel gives every write its offset, and pwrite on an O_APPEND fd would ignore it.
        try:
            fd = os.open(p, os.O_RDWR)
        except PermissionError:
            fd = os.open(p, os.O_RDONLY)
        return self._opened(fd, p, bool(flags & os.O_TRUNC))

    def create(self, path, mode, fi=None):
        p = self._p(path)
        with self.cache.lock:
            fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, mode)
            return self._opened(fd, p, True)

    def read(self, path, size, offset, fh):
        return self.cache.read(fh, self.fds.get(fh) or self._ino(fh), size, offset)

    def write(self, path, data, offset, fh):
        return self.cache.write(fh, self.fds.get(fh) or self._ino(fh), bytes(data), offset)

    def truncate(self, path, length, fh=None):
        if fh is not None and fh in self.fds:
            return self.cache.truncate(fh, self.fds[fh], length)
        fd = os.open(self._p(path), os.O_RDWR)
        try:
            self.cache.truncate(fd, self._ino(fd), length)
        finally:
            os.close(fd)

    def fsync(self, path, datasync, fh):
        self.cache.sync(fh, self.fds.get(fh) or self._ino(fh))
        return 0

    def fsyncdir(self, path, datasync, fh):
        return 0                     # directory entries are on the disk already

    def flush(self, path, fh):
        return 0                     # close() is not a sync

    def release(self, path, fh):
        self.fds.pop(fh, None)
        os.close(fh)
        return 0

    # -- the emulated kernel flusher ------------------------------------------------------------------------
    def writeback(self, expire_ns: int) -> int:
        """Write back every file dirty for `expire_ns` or longer, whole; returns how many."""
        done = 0
        for ino in self.cache.expired(expire_ns):
            p = self.paths.get(ino)
            try:
                fd = os.open(p, os.O_RDWR) if p else -1
            except OSError:
                fd = -1
            if fd < 0 or self._ino(fd) != ino:
                if fd >= 0:
                    os.close(fd)
                continue                          # renamed or gone: it is written back when synced or forgotten
            try:
                self.cache.sync(fd, ino)
                done += 1
            finally:
                os.close(fd)
        return done


def _flusher(fs: LazyFS, expire_ms: int, interval_ms: int, stop: threading.Event) -> None:
    """The writeback every `interval_ms`; the size limit's count of used space every second."""
    next_writeback = time.monotonic() + interval_ms / 1000
    while not stop.wait(min(1.0, interval_ms / 1000)):
        try:
            if fs.cache.space is not None:
                fs.cache.space.refresh()
            if time.monotonic() >= next_writeback:
                next_writeback += interval_ms / 1000
                fs.writeback(expire_ms * 1_000_000)
        except Exception:  # noqa: BLE001 - the flusher must not die; the next pass tries again
            pass


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m kafka_chaos.cluster.lazyfs", description=__doc__.split("\n")[0])
    ap.add_argument("backing")
    ap.add_argument("mountpoint")
    ap.add_argument("--dirty-expire-ms", type=int, default=30_000, help="Linux's dirty_expire_centisecs default")
    ap.add_argument("--writeback-interval-ms", type=int, default=5_000,
                    help="Linux's dirty_writeback_centisecs default")
    ap.add_argument("--no-disk-fsync", action="store_true", help="do not fdatasync the backing file on fsync")
    ap.add_argument("--capacity-mb", type=int, help="a size limit (default: none, the host disk's)")
    ap.add_argument("--ballast", help="a file outside the mount whose size counts against the limit (disk full)")
    a = ap.parse_args(argv)
    import mfusepy

    class _Ops(LazyFS, mfusepy.Operations):
        pass

    space = Space(os.path.abspath(a.backing), a.capacity_mb << 20, a.ballast) if a.capacity_mb else None
    fs = _Ops(os.path.abspath(a.backing), PageCache(fsync_disk=not a.no_disk_fsync, space=space))
    stop = threading.Event()
    threading.Thread(target=_flusher, args=(fs, a.dirty_expire_ms, a.writeback_interval_ms, stop),
                     daemon=True).start()
    try:
        mfusepy.FUSE(fs, a.mountpoint, foreground=True, allow_other=True, fsname=FSNAME, subtype=FSNAME,
                     nothreads=False, use_ino=True)
    finally:
        stop.set()


if __name__ == "__main__":
    main()
