"""The in-process backend's side in the supervisor: one host process per team
(``python -m agentproc.host``) whose threads are the team's in-process teammates.

To the children's state machine each such teammate looks like a process: it gets a number
of its own (above any real pid, so never signalled as one), is started, signalled and
"reaped" through this seam, and its restart policy applies to it alone. The host is started
with the first in-process teammate and again after it died; its death is the exit of every
teammate in it, each then restarted by the policy in a new host.

Each tool command of an in-process teammate runs in a session of its own, which the host
ends with the teammate. The host tells of each, so that its death ends them too: their
leaders, its children, are ours then (we are a child subreaper), so their numbers are still
theirs when we kill them.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable

import msgspec

from ipc.errors import AgentTeamsError
from ipc.host_protocol import Report, Running, Start, Stop, ToolSession
from ipc.launch import LaunchSpec
from ipc.osproc import kill_session, signal_sessions
from ipc.paths import TeamPaths
from ipc.replies import TeammateStatus
from supervisor.daemon.reactor import Reactor

log = logging.getLogger("agentteams.supervisor")
FIRST_ID = 1 << 23  # above Linux's largest pid (2^22): a teammate's number is never a process's
HOST_MODULE = "agentproc.host"


class InProcess:
    def __init__(self, reactor: Reactor, paths: TeamPaths) -> None:
        self.reactor = reactor
        self.log = paths.host_log()
        self.names = [
            "--root",
            str(paths.root),
            "--team",
            paths.team,
        ]  # in its command line, for ps and people
        self.host_pid: int | None = None
        self.sock: socket.socket | None = None
        self.ids = itertools.count(FIRST_ID)
        self.by_id: dict[int, str] = {}
        self.threads: dict[str, int] = {}  # teammate -> its thread's native id in the host
        self.tool_sessions: set[int] = set()  # the sessions its teammates' tools run in, not yet ended
        self.on_exit: Callable[[int, int], None] = lambda pid, status: None  # set by the supervisor

    def owns(self, pid: int) -> bool:
        return pid >= FIRST_ID

    def start(self, spec: LaunchSpec, key: bytes | None = None) -> int:
        self._send(Start(spec=spec, key=key or b""))
        number = next(self.ids)
        self.by_id[number] = spec.agent_name
        return number

    def signal(self, number: int, sig: int) -> None:
        name = self.by_id.get(number)
        if name is not None and self.sock is not None:
            self._send(
                Stop(name=name, signal=sig if sig in (signal.SIGTERM, signal.SIGKILL) else signal.SIGTERM)
            )

    def handle(self, spec: LaunchSpec) -> str:
        return f"in-process:{self.host_pid}"

    def place(self, status: TeammateStatus) -> TeammateStatus:
        """An in-process teammate's status, with its host's pid and its thread's id."""
        if status.backend != "in-process" or status.pid is None or status.pid not in self.by_id:
            return status
        return msgspec.structs.replace(status, host_pid=self.host_pid, thread=self.threads.get(status.name))

    # ------------------------------------------------------------ the host

    def _send(self, message: Start | Stop) -> None:
        if self.sock is None:
            self._start_host()
        assert self.sock is not None
        try:
            self.sock.send(msgspec.msgpack.encode(message))
        except OSError as exc:
            raise AgentTeamsError(f"the in-process host is not answering: {exc.strerror}") from exc

    def _start_host(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [sys.executable, "-m", HOST_MODULE, "--fd", str(theirs.fileno())]
        argv += ["--supervisor-pid", str(os.getpid()), *self.names]
        with open(self.log, "ab") as out:
            try:
                proc = subprocess.Popen(
                    argv,
                    pass_fds=(theirs.fileno(),),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                    start_new_session=True,
                )
            except OSError as exc:
                raise AgentTeamsError(f"cannot start the in-process host: {exc.strerror}") from exc
            finally:
                theirs.close()
        proc.returncode = 0  # reaped by the supervisor's reaper, never through Popen
        self.host_pid = proc.pid
        self.sock = ours
        self.reactor.add_reader(ours.fileno(), self._on_message)
        log.info("in-process host started, pid %d", proc.pid)

    def _on_message(self) -> None:
        assert self.sock is not None
        try:
            data = self.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self._drop_socket()  # the host is gone; its reaping says how
            return
        ended = msgspec.msgpack.decode(data, type=Report)
        if isinstance(ended, Running):
            self.threads[ended.name] = ended.thread
            return
        if isinstance(ended, ToolSession):
            if ended.running:
                self.tool_sessions.add(ended.sid)
            else:
                self.tool_sessions.discard(ended.sid)
            return
        self.threads.pop(ended.name, None)
        for number, name in list(self.by_id.items()):
            if name == ended.name:
                del self.by_id[number]
                self.on_exit(number, ended.status)

    def _drop_socket(self) -> None:
        if self.sock is not None:
            self.reactor.remove_reader(self.sock.fileno())
            self.sock.close()
            self.sock = None

    def host_exited(self, status: int) -> None:
        """The host died: each teammate in it exited the same way."""
        log.error("the in-process host (pid %s) died: %s", self.host_pid, os.waitstatus_to_exitcode(status))
        self._drop_socket()
        self.host_pid = None
        self._end_tools()
        ended, self.by_id = self.by_id, {}
        self.threads.clear()
        for number in ended:
            self.on_exit(number, status)

    def _end_tools(self) -> None:
        """SIGKILL the sessions of the teammates' tools: the host is gone, or going. Their
        leaders are its children or, once it is gone, ours; none is reaped by now (the host
        tells before it reaps one, and our reaper kills a leader's session before it does)."""
        sessions, self.tool_sessions = self.tool_sessions, set()
        if sessions:
            signal_sessions(sessions, signal.SIGKILL)

    def close(self) -> None:
        self._drop_socket()
        if self.host_pid is not None:
            self._end_tools()
            kill_session(self.host_pid)  # the host and what else is of its session (not yet reaped)
