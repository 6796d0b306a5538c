"""The power-loss layer without Kafka: what a power cut keeps (exactly the synced bytes), the emulated writeback, and
that nothing of it outlives its owner (the reaper after kill -9, `remove_all`). Real FUSE mounts, in a temp dir."""
from __future__ import annotations

import mmap
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafka_chaos.base.waiting import wait_until
from kafka_chaos.cluster import powerfs
from kafka_chaos.cluster.lazyfs import LazyFS, PageCache

needs_fuse = pytest.mark.skipif(not os.path.exists("/dev/fuse") or os.geteuid() != 0,
                                reason="needs /dev/fuse and root (mount)")


def _lazyfs_processes(mnt: Path) -> list[int]:
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"kafka_chaos.cluster.lazyfs" in cmd and str(mnt).encode() in cmd:
            out.append(int(pid))
    return out


def test_the_page_cache_keeps_unsynced_writes_off_the_disk_until_fsync_or_writeback(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    fs = LazyFS(str(disk), PageCache(fsync_disk=False))
    fh = fs.create("/seg.log", 0o644)
    fs.write("/seg.log", b"a" * 5000, 0, fh)
    fs.fsync("/seg.log", 0, fh)
    fs.write("/seg.log", b"b" * 3000, 5000, fh)
    assert fs.getattr("/seg.log", fh)["st_size"] == 8000               # what the writer sees
    assert fs.read("/seg.log", 8000, 0, fh) == b"a" * 5000 + b"b" * 3000
    assert (disk / "seg.log").read_bytes() == b"a" * 5000              # what a power cut would leave
    fs.truncate("/seg.log", 6000, fh)                                  # metadata: on the disk at once
    assert fs.read("/seg.log", 9000, 0, fh) == b"a" * 5000 + b"b" * 1000
    assert os.path.getsize(disk / "seg.log") == 6000
    assert fs.writeback(expire_ns=10**12) == 0                         # not expired yet: stays dirty
    assert fs.writeback(expire_ns=0) == 1                              # the flusher writes the whole file back
    assert (disk / "seg.log").read_bytes() == b"a" * 5000 + b"b" * 1000
    fs.release("/seg.log", fh)


@needs_fuse
def test_a_power_cut_keeps_exactly_the_synced_bytes(tmp_path):
    layer = powerfs.PowerFS("run-a", 1, base=tmp_path).mount()
    m = layer.mnt
    try:
        (m / "unsynced").write_bytes(b"u" * 10_000)
        with open(m / "log", "wb") as f:
            f.write(b"s" * 10_000)
            f.flush()
            os.fsync(f.fileno())
            f.write(b"t" * 500)                                        # after the last fsync: lost
        fd = os.open(m / "index", os.O_RDWR | os.O_CREAT)              # Kafka's indexes: preallocated, mmapped
        os.ftruncate(fd, 1 << 16)
        with mmap.mmap(fd, 1 << 16) as mm:
            mm[0:8] = b"ENTRY001"
            mm.flush()                                                 # msync: Kafka's index flush
        os.close(fd)
        os.rename(m / "log", m / "log.renamed")                        # metadata survives
        (m / "rewritten").write_bytes(b"old" * 1000)
        with open(m / "rewritten", "r+b") as f:
            os.fsync(f.fileno())
        (m / "rewritten").write_bytes(b"new")                          # O_TRUNC on open, then 3 bytes
        with open(m / "rewritten", "ab") as f:
            f.write(b"+")
        assert (m / "rewritten").read_bytes() == b"new+"
        assert os.path.getsize(m / "log.renamed") == 10_500
        pid = layer._pid()
        layer.power_cycle()
        assert pid not in _lazyfs_processes(m) and layer.mounted() and layer._pid() != pid
        assert (m / "unsynced").read_bytes() == b""                    # the file exists; its data never synced
        assert (m / "log.renamed").read_bytes() == b"s" * 10_000
        assert (m / "index").read_bytes()[:8] == b"ENTRY001"
        assert not (m / "log").exists()
        assert (m / "rewritten").read_bytes() == b""                   # truncated at once; the new bytes unsynced
    finally:
        powerfs.remove_run("run-a", tmp_path)
    assert not _lazyfs_processes(m) and str(m) not in powerfs.lazyfs_mounts() and not layer.dir.exists()


@needs_fuse
@pytest.mark.parametrize("docker_host", [None, "unix:///nonexistent/docker.sock"], ids=["docker", "no-docker"])
def test_the_reaper_removes_the_mounts_of_a_run_whose_process_was_killed(tmp_path, docker_host):
    """kill -9 of the owning process: the reaper (its stdin closes) kills lazyfs and detaches the mount, also when
    it cannot reach Docker to remove containers (the mounts were left behind then, on a machine whose dockerd
    was not running)."""
    script = textwrap.dedent("""
        import sys, time
        from kafka_chaos.cluster import powerfs
        from kafka_chaos.cluster.reaper import Reaper
        Reaper("run-k")
        powerfs.prepare_run("run-k", 1)
        powerfs.PowerFS("run-k", 1).mount()
        print("mounted", flush=True)
        time.sleep(600)
    """)
    env = os.environ | {"KAFKA_CHAOS_LAZYFS_ROOT": str(tmp_path)}
    if docker_host:
        env["DOCKER_HOST"] = docker_host
    owner = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
    mnt = tmp_path / "run-k" / "n1" / "mnt"
    try:
        assert owner.stdout.readline().strip() == "mounted"
        assert str(mnt) in powerfs.lazyfs_mounts() and _lazyfs_processes(mnt)
        owner.kill()
        owner.wait()
        wait_until(lambda: not _lazyfs_processes(mnt) and str(mnt) not in powerfs.lazyfs_mounts()
                   and not (tmp_path / "run-k").exists(), 60, "the reaper left the lazyfs mount behind")
    finally:
        owner.kill()
        powerfs.remove_run("run-k", tmp_path)


@needs_fuse
def test_remove_all_and_the_orphan_sweep_leave_no_mount(tmp_path):
    powerfs.prepare_run("run-x", 0, tmp_path)                          # a kept cluster: only remove_all takes it
    kept = powerfs.PowerFS("run-x", 1, base=tmp_path).mount()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    powerfs.prepare_run("run-y", dead.pid, tmp_path)                   # its owner is gone: an orphan
    orphan = powerfs.PowerFS("run-y", 2, base=tmp_path).mount()
    try:
        assert powerfs.sweep_orphans(tmp_path) == 1
        assert kept.mounted() and not orphan.dir.exists() and str(orphan.mnt) not in powerfs.lazyfs_mounts()
        assert powerfs.remove_all(tmp_path) == 1
        assert not any(m.startswith(str(tmp_path)) for m in powerfs.lazyfs_mounts())
        assert not _lazyfs_processes(kept.mnt) and powerfs.runs(tmp_path) == []
    finally:
        powerfs.remove_all(tmp_path)


def test_a_writeback_while_getattr_reads_the_disk_never_shows_the_old_size(tmp_path, monkeypatch):
    """The flusher writing a file back between getattr's look at the disk and its look for dirty pages must not make
    getattr answer the disk's old size (the kernel would end reads there: a broker halted on it)."""
    import threading

    from kafka_chaos.cluster import lazyfs

    disk = tmp_path / "disk"
    disk.mkdir()
    fs = LazyFS(str(disk), PageCache(fsync_disk=False))
    fh = fs.create("/meta.log", 0o644)
    fs.write("/meta.log", b"m" * 25_289, 0, fh)
    fs.fsync("/meta.log", 0, fh)
    fs.write("/meta.log", b"n" * 17, 25_289, fh)                         # dirty: 25,306 bytes for the writer
    real_fstat = os.fstat

    def fstat_then_writeback(fd):
        st = real_fstat(fd)
        if fd == fh:
            flusher = threading.Thread(target=fs.writeback, args=(0,))
            flusher.start()
            flusher.join(0.5)                # with the fix it waits for the lock getattr holds
        return st

    monkeypatch.setattr(lazyfs.os, "fstat", fstat_then_writeback)
    assert fs.getattr("/meta.log", fh)["st_size"] == 25_306
    monkeypatch.setattr(lazyfs.os, "fstat", real_fstat)
    fs.release("/meta.log", fh)
