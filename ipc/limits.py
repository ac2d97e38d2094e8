"""How many files and ZeroMQ sockets a process may hold, and raising the first toward its cap.

The kernel stops a process at the soft ``RLIMIT_NOFILE``, which the process may raise on its
own up to the hard limit; ZeroMQ stops a context at ``MAX_SOCKETS`` (1,023 unless set before
the context's first socket). A process that holds a few of each per teammate (the
supervisor) sizes both for what it runs; this module says what is possible, the caller
decides. All ZeroMQ detail stays here and in :mod:`ipc.poller`.
"""

from __future__ import annotations

import os
import resource

import zmq

ZMQ_DEFAULT_SOCKETS = 1023  # libzmq's ZMQ_MAX_SOCKETS_DFLT
NOFILE_CAP = 1 << 20  # an "unlimited" hard limit is taken as this: nothing here needs more


def nofile() -> tuple[int, int]:
    """This process's (soft, hard) open-file limit, an unlimited one as :data:`NOFILE_CAP`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return _finite(soft), _finite(hard)


def _finite(value: int) -> int:
    return NOFILE_CAP if value == resource.RLIM_INFINITY or value > NOFILE_CAP else value


def raise_nofile(wanted: int) -> int:
    """Raise the soft limit to ``wanted`` (at most the hard limit, never lower than it is);
    returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(wanted, _finite(hard))
    if target <= _finite(soft):
        return _finite(soft)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        return _finite(soft)
    return target


def set_soft_nofile(soft: int) -> None:
    """Put the soft limit back to ``soft`` (a process started by one that raised its own:
    the programs it runs get the limit the person set, not the supervisor's)."""
    current, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft <= 0 or soft == current:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, _finite(hard)), hard))
    except (ValueError, OSError):
        pass  # keep what we have: a limit is a safeguard, not a reason to stop


def open_files() -> int:
    """How many file descriptors this process has open now."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:  # no /proc: count the hard way, up to the soft limit
        count = 0
        for fd in range(nofile()[0]):
            try:
                os.fstat(fd)
            except OSError:
                continue
            count += 1
        return count


def zmq_socket_limit() -> int:
    """The most sockets this libzmq lets one context be sized for."""
    ctx = zmq.Context(io_threads=1)
    try:
        return int(ctx.get(zmq.SOCKET_LIMIT))
    finally:
        ctx.term()
