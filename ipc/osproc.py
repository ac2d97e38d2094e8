"""Linux process controls both sides need, behind one seam: prctl and process names."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _prctl(option: int, value: int | bytes) -> bool:
    arg = ctypes.c_char_p(value) if isinstance(value, bytes) else ctypes.c_ulong(value)
    return int(_libc.prctl(option, arg, 0, 0, 0)) == 0


def set_parent_death_signal(sig: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies."""
    return _prctl(PR_SET_PDEATHSIG, int(sig))


def set_child_subreaper() -> bool:
    """Orphaned descendants are re-parented to this process rather than to init."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def kill_session(sid: int, *, spare: int | None = None) -> int:
    """SIGKILL every process of session ``sid`` but ``spare``: what a teammate (a session
    leader) started, in whatever process group. Returns how many were signalled."""
    if sid <= 1:
        raise ValueError(f"refusing to kill session {sid}")
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == spare:
            continue
        pid = int(entry)
        try:
            if os.getsid(pid) == sid:
                os.kill(pid, signal.SIGKILL)
                killed += 1
        except (ProcessLookupError, PermissionError):
            continue
    return killed


def set_process_name(name: str) -> None:
    """The kernel's 15-byte ``comm`` name, shown by ps and psutil.Process.name()."""
    _prctl(PR_SET_NAME, name.encode()[:15])
