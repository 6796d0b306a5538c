"""Is a process still there? One answer for the whole house, safe against the process going away while we look."""
from __future__ import annotations


def pid_alive(pid: int) -> bool:
    """True while `pid` runs; False once it has exited, as a zombie (killed, not yet reaped) or reaped.

    Reads /proc/<pid>/stat (readable for any user's process, unlike a signal 0 to it). A process reaped between
    the open and the read makes the read fail with ESRCH (ProcessLookupError): that is "gone" too.
    """
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:                       # FileNotFoundError: reaped before; ProcessLookupError: while reading
        return False
    fields = stat.rsplit(")", 1)
    return len(fields) == 2 and fields[1].split()[:1] not in ([], ["Z"], ["X"])
