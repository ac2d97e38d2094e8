"""The resident door's socket, on the supervisor's side: bound (0600, in the 0700 runtime
directory) when the team comes up, and watched until someone connects; then the door's
program (``python -m supervisor.resident``, the client side's, never imported here) is
started with the socket and serves it, and the supervisor looks away until that program
exits (idle, crashed, killed: a pidfd says so; the supervisor's reaper reaps it), when it
watches again. The supervisor's loop never reads a request, so no client can slow it.

A door program that exits before it says it serves (a byte on a pipe) could not start: the
clients waiting in the socket's queue, whose requests nobody read, are told so at once (the
door's own "fallback" reply: they take the full path), and so is every client for a while
after (a second, doubling up to a minute while it keeps failing) before it is tried again."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

from ipc.resident import SOCKET_NAME
from supervisor.daemon.reactor import Reactor

log = logging.getLogger("agentteams.supervisor")
MODULE = "supervisor.resident"
RETRY = 1.0  # a door that could not start is tried again only after this long, doubled each time
RETRY_MOST = 60.0
# What a client in the queue hears when the door could not start (ipc.resident.Reply, by hand:
# nothing of the door's is imported here; a test decodes it as one).
COULD_NOT_START = b'{"ok":false,"fallback":"the resident door could not start"}\n'
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
        self.ready = -1  # the read end of the pipe on which the door says it serves
        self.retry = RETRY
        self.refuse_until = 0.0  # the door could not start: until then, clients hear so at once
        self.closed = False
        self._watch()

    def _watch(self) -> None:
        if not self.closed and self.pid is None:
            self.reactor.add_reader(self.sock.fileno(), self._on_demand)

    def _on_demand(self) -> None:
        if self.reactor.now() < self.refuse_until:
            self._turn_away()  # and go on watching
            return
        self.reactor.remove_reader(self.sock.fileno())
        fd = self.sock.fileno()
        ready, says = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        argv = [sys.executable, "-m", MODULE, "--root", str(self.root), "--team", self.team]
        argv += ["--fd", str(fd), "--supervisor-pid", str(os.getpid()), "--ready", str(says)]
        logs = self.runtime / "logs"
        logs.mkdir(mode=0o700, exist_ok=True)
        try:
            with open(logs / "resident-door.log", "ab") as out:
                proc = subprocess.Popen(
                    argv,
                    pass_fds=(fd, says),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    start_new_session=True,
                )
        except OSError as exc:
            log.error("cannot start the resident door: %s", exc.strerror)
            os.close(ready)
            self._could_not_start()
            return
        finally:
            os.close(says)  # the door holds it now: at its exit, the pipe reads end-of-file
        proc.returncode = 0  # reaped by the supervisor's reaper, never through Popen
        self.pid, self.ready = proc.pid, ready
        self.pidfd = os.pidfd_open(proc.pid)  # our child, not yet reaped: the pid is still its
        self.reactor.add_reader(self.pidfd, self._exited)
        log.info("resident door started, pid %d", proc.pid)

    def _exited(self) -> None:
        """Its program exited: watch the socket again."""
        self.reactor.remove_reader(self.pidfd)
        os.close(self.pidfd)
        try:
            served = os.read(self.ready, 1) != b""
        except BlockingIOError:  # nothing said, the write end still open somewhere: not served
            served = False
        os.close(self.ready)
        log.info("the resident door (pid %s) exited", self.pid)
        self.pid, self.pidfd, self.ready = None, -1, -1
        if served:
            self.retry = RETRY
            self._watch()
        else:
            self._could_not_start()

    def _could_not_start(self) -> None:
        log.error(
            "the resident door could not start (see logs/resident-door.log); tried again in %.0f s",
            self.retry,
        )
        self.refuse_until = self.reactor.now() + self.retry
        self.retry = min(2 * self.retry, RETRY_MOST)
        self._turn_away()
        self._watch()

    def _turn_away(self) -> None:
        """Tell each client in the queue that the door could not start: its request was never
        read, so nothing was done, and it takes the full path (it is never read here either)."""
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # BlockingIOError: the queue is empty
                return
            with conn:
                conn.setblocking(False)
                with contextlib.suppress(OSError):  # a client gone already: nothing to tell
                    conn.send(COULD_NOT_START)

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
        if self.ready >= 0:
            os.close(self.ready)
        self.sock.close()
        self.path.unlink(missing_ok=True)
