"""Linux process controls both sides need, behind one seam: prctl, process titles, pidfds
and killing a session."""

from __future__ import annotations

import functools
import os
import signal
from collections.abc import Collection
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36


@functools.cache
def libc() -> Any:
    """The C library this process already runs on (dlopen(NULL)), loaded on first use: a
    command that needs none of it does not import ctypes, and find_library("c") would run
    `ldconfig -p` in a subprocess."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int | bytes) -> bool:
    import ctypes

    arg = ctypes.c_char_p(value) if isinstance(value, bytes) else ctypes.c_ulong(value)
    return int(libc().prctl(option, arg, 0, 0, 0)) == 0


M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 128 * 1024  # glibc's starting value


def fix_malloc_mmap_threshold(size: int = MMAP_THRESHOLD) -> bool:
    """Serve every allocation of ``size`` bytes or more with its own mmap, for good.

    glibc raises this threshold each time such a block is freed, after which big buffers
    (a chunk of an inbox being archived, a message just received) come from the heap, where
    a small object left above them keeps the heap from shrinking: a long-running process's
    RSS then climbs in steps. Fixing the threshold keeps it flat. False where the C library
    has no ``mallopt`` (musl)."""
    mallopt = getattr(libc(), "mallopt", None)
    return mallopt is not None and int(mallopt(M_MMAP_THRESHOLD, size)) == 1


def set_parent_death_signal(sig: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies."""
    return _prctl(PR_SET_PDEATHSIG, int(sig))


def set_child_subreaper() -> bool:
    """Orphaned descendants are re-parented to this process rather than to init."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def kill_session(sid: int, *, spare: int | None = None) -> int:
    """SIGKILL every process of session ``sid`` but ``spare``: what a teammate (a session
    leader) started, in whatever process group. Returns how many were signalled.

    Call it only while ``sid`` cannot have been reused: before the session leader is reaped
    (its zombie holds the number), or from inside the session."""
    return signal_sessions({sid}, signal.SIGKILL, spare=spare)


def signal_sessions(sids: Collection[int], sig: int, *, spare: int | None = None) -> int:
    """Send ``sig`` to every process of the sessions ``sids`` but ``spare``; how many were
    signalled. The same care as :func:`kill_session`: no session's number may be reused."""
    if any(sid <= 1 for sid in sids):
        raise ValueError(f"refusing to signal sessions {sorted(sids)}")
    signalled = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == spare:
            continue
        pid = int(entry)
        try:
            if os.getsid(pid) in sids:
                os.kill(pid, sig)
                signalled += 1
        except (ProcessLookupError, PermissionError):
            continue
    return signalled


def session_members(sids: Collection[int]) -> dict[int, list[int]]:
    """The processes of the sessions ``sids`` that have not exited (zombies left out), by
    session; a session none of whose processes runs is not in it."""
    found: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            sid = os.getsid(pid)
        except (ProcessLookupError, PermissionError):
            continue
        if sid in sids and alive(pid):
            found.setdefault(sid, []).append(pid)
    return found


def set_process_name(name: str) -> None:
    """The kernel's 15-byte ``comm`` name, shown by ps and psutil.Process.name()."""
    _prctl(PR_SET_NAME, name.encode()[:15])


def prepare_command_line() -> None:
    """Make :func:`set_command_line` work in children forked later, whatever they do to
    their environment first (setproctitle needs the original argv and environ once)."""
    import setproctitle  # here, not at the top: a quick command never sets its title

    setproctitle.setproctitle(setproctitle.getproctitle())


def set_command_line(argv: list[str]) -> None:
    """What ``/proc/PID/cmdline`` and ``ps`` show for this process (a forked teammate shows
    Claude Code's flags, so process-tree tools find it by ``--agent-id``)."""
    import setproctitle

    setproctitle.setproctitle(" ".join(argv))


def command_line_args(cmdline: list[str]) -> list[str]:
    """A process's arguments as psutil reads them, also for a title set with
    :func:`set_command_line` (one string, then empty padding)."""
    args = [a for a in cmdline if a]
    return args[0].split() if len(args) == 1 and " " in args[0] else args


def pidfd_open(pid: int) -> int | None:
    """A pidfd that becomes readable when ``pid`` exits (any process, not only a child);
    None if the process is already gone."""
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return None


def alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"
