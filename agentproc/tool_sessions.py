"""An in-process teammate's tool commands, each in a session of its own, ended with it.

A teammate process is the session of everything its tools start: its end (the supervisor
kills its session) ends them all, also a job a command put in a process group of its own
(``set -m; cmd &``). An in-process teammate shares its host's session with the team's other
teammates, so each of its commands is started in a new session, which this records and ends
when the teammate ends, however it ends.

A session is known by its leader's pid. The leader's zombie is kept (not reaped) while
anything else still runs in its session, so that number cannot be handed to another
process, whose session would then be taken for this one. ``Popen`` must therefore never
reap a leader: its ``returncode`` is set at once (as the supervisor does for its children)
and the exit code is read without reaping (``waitid(WNOWAIT)``).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from ipc.osproc import session_members, signal_sessions

GRACE = 2.0  # s between SIGTERM and SIGKILL when the teammate ends
_everyone: set[ToolSessions] = set()  # of every teammate of this host, for its SIGTERM handler


class ToolSessions:
    def __init__(self, report: Callable[[int, bool], None] = lambda sid, running: None) -> None:
        self.lock = threading.Lock()  # a session is never reaped while another thread signals it
        self.leaders: dict[int, subprocess.Popen[bytes]] = {}  # by pid, its session's id; unreaped
        self.codes: dict[int, int] = {}  # exited leaders' exit codes, their zombies kept
        self.report = report  # (session, running): the supervisor ends them if the host dies
        _everyone.add(self)

    def start(self, argv: list[str], **popen: Any) -> subprocess.Popen[bytes]:
        with self.lock:
            self._settle()
            proc = subprocess.Popen(argv, start_new_session=True, **popen)
            proc.returncode = 0  # never reaped through Popen; exit_code() says how it exited
            self.leaders[proc.pid] = proc
            self.report(proc.pid, True)
        return proc

    def exit_code(self, proc: subprocess.Popen[bytes], timeout: float | None) -> int:
        """How ``proc`` exited, once it has (TimeoutExpired after ``timeout``); not reaped."""
        code = self.codes.get(proc.pid)
        if code is not None or self.leaders.get(proc.pid) is not proc:
            return proc.returncode  # known (or reaped, when it was set)
        fd = os.pidfd_open(proc.pid)  # our unreaped child: its pid is still its
        try:
            if not select.select([fd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(proc.args, timeout or 0)
        finally:
            os.close(fd)
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        assert info is not None
        code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        self.codes[proc.pid] = proc.returncode = code
        return code

    def poll(self, proc: subprocess.Popen[bytes]) -> int | None:
        try:
            return self.exit_code(proc, 0)
        except subprocess.TimeoutExpired:
            return None

    def kill(self, proc: subprocess.Popen[bytes] | None = None) -> None:
        """SIGKILL the session of ``proc``, or all of them."""
        with self.lock:
            sids = set(self.leaders) if proc is None else {proc.pid} & set(self.leaders)
            if sids:
                signal_sessions(sids, signal.SIGKILL)

    def settle(self) -> None:
        with self.lock:
            self._settle()

    def _settle(self) -> None:
        """Reap the leaders that exited and whose sessions nothing runs in any more."""
        exited = [pid for pid, proc in self.leaders.items() if self.poll(proc) is not None]
        if exited:
            running = session_members(exited)
            self._reap([pid for pid in exited if pid not in running])

    def _reap(self, pids: list[int]) -> None:
        for pid in pids:
            self.report(pid, False)  # before the number is free
            proc = self.leaders.pop(pid)
            self.codes.pop(pid, None)
            with contextlib.suppress(ChildProcessError):
                proc.returncode = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    def end(self, grace: float = GRACE) -> None:
        """The teammate ended: every process of its sessions gets SIGTERM, then SIGKILL if
        still there after ``grace``; the leaders are reaped."""
        with self.lock:
            sids = set(self.leaders)
            termed = bool(sids) and signal_sessions(sids, signal.SIGTERM) > 0
        deadline = time.monotonic() + grace  # its host may stop it meanwhile (kill())
        while termed and session_members(sids) and time.monotonic() < deadline:
            time.sleep(0.02)
        with self.lock:
            if sids:
                signal_sessions(sids, signal.SIGKILL)
            self._reap(list(sids))
        _everyone.discard(self)


def kill_all() -> None:
    """SIGKILL every session of every teammate of this process: it is going. From a signal
    handler, so no lock (the process exits next)."""
    sids = {sid for sessions in list(_everyone) for sid in list(sessions.leaders)}
    if sids:
        signal_sessions(sids, signal.SIGKILL)
