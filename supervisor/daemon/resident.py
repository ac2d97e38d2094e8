"""The resident door's socket, on the supervisor's side: bound (0600, in the 0700 runtime
directory) when the team comes up, and watched until someone connects; then the door's
program (``python -m supervisor.resident``, the client side's, never imported here) is
started with the socket and serves it, and the supervisor looks away until that program
exits (idle, crashed, killed: a pidfd says so; the supervisor's reaper reaps it), when it
watches again. The supervisor's loop never reads a request, so no client can slow it."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from ipc.resident import SOCKET_NAME
from supervisor.daemon.reactor import Reactor

log = logging.getLogger("agentteams.supervisor")
MODULE = "supervisor.resident"
RETRY = 1.0  # a door that died within this long of its start is started again only after it
STOP_WAIT = 11.0  # seconds a stopped door has to finish what it is doing (its own drain, 10 s, and one)


class ResidentDoor:
    def __init__(self, reactor: Reactor, runtime: Path, root: Path, team: str) -> None:
        self.reactor = reactor
        self.runtime, self.root, self.team = runtime, root, team
        self.path = runtime / SOCKET_NAME
        self.path.unlink(missing_ok=True)  # a killed supervisor's (we hold the team's lock)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        umask = os.umask(0o177)  # born 0600: no moment at which another user could connect
        try:
            self.sock.bind(str(self.path))
        finally:
            os.umask(umask)
        self.sock.listen(256)
        self.sock.setblocking(False)
        self.pid: int | None = None
        self.pidfd = -1
        self.started = 0.0
        self.closed = False
        self._watch()

    def _watch(self) -> None:
        if not self.closed and self.pid is None:
            self.reactor.add_reader(self.sock.fileno(), self._on_demand)

    def _on_demand(self) -> None:
        self.reactor.remove_reader(self.sock.fileno())
        fd = self.sock.fileno()
        argv = [sys.executable, "-m", MODULE, "--root", str(self.root), "--team", self.team]
        argv += ["--fd", str(fd), "--supervisor-pid", str(os.getpid())]
        logs = self.runtime / "logs"
        logs.mkdir(mode=0o700, exist_ok=True)
        try:
            with open(logs / "resident-door.log", "ab") as out:
                proc = subprocess.Popen(
                    argv,
                    pass_fds=(fd,),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    start_new_session=True,
                )
        except OSError as exc:
            log.error("cannot start the resident door: %s", exc.strerror)
            self.reactor.call_later(RETRY, self._watch)
            return
        proc.returncode = 0  # reaped by the supervisor's reaper, never through Popen
        self.pid, self.started = proc.pid, time.monotonic()
        self.pidfd = os.pidfd_open(proc.pid)  # our child, not yet reaped: the pid is still its
        self.reactor.add_reader(self.pidfd, self._exited)
        log.info("resident door started, pid %d", proc.pid)

    def _exited(self) -> None:
        """Its program exited: watch the socket again."""
        self.reactor.remove_reader(self.pidfd)
        os.close(self.pidfd)
        log.info("the resident door (pid %s) exited", self.pid)
        self.pid, self.pidfd = None, -1
        if time.monotonic() - self.started < RETRY:
            self.reactor.call_later(RETRY, self._watch)  # not a hot loop on a door that cannot start
        else:
            self._watch()

    def close(self) -> None:
        """The team goes down: the door finishes the requests under way and exits, before the
        supervisor does (a ``down`` that returned leaves nothing running)."""
        self.closed = True
        if self.pid is not None:  # signalled through its pidfd: the reaper may have reaped it already
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGTERM)
            gone, _, _ = select.select([self.pidfd], [], [], STOP_WAIT)
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                if not gone:
                    signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
                os.waitid(os.P_PIDFD, self.pidfd, os.WEXITED)  # not by number: it may be another's now
        if self.pidfd >= 0:
            os.close(self.pidfd)
        self.sock.close()
        self.path.unlink(missing_ok=True)
