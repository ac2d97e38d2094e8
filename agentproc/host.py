"""An in-process host (``python -m agentproc.host``): one process per team whose teammates
are its threads, as Claude Code's InProcessRunner runs teammates inside the lead's process.

Each teammate is an :class:`~agentproc.loop.AgentLoop` of its own (conversation, tools,
inbox, identity, cwd: all carried by its own context, none by the process), with its own
link and doorbell, woken like any teammate. Which teammate a log line is about is a context
variable, as AsyncLocalStorage carries the agent in Claude Code.

The supervisor starts the host and talks to it over a socket pair: ``Start`` a teammate,
``Stop`` one; the host answers ``Ended`` with a wait status when a teammate's loop returns
or raises, so the supervisor's restart policy applies to one teammate and the host goes on.
A stop kills its tools and rings the teammate awake to return at once; a ``SIGKILL`` gives it
up (a thread cannot be killed: one stuck in Python leaves with the host). Its tools' commands
run in sessions of their own (:mod:`agentproc.tool_sessions`), ended when it ends, however
it ends; the supervisor hears of each, to end them if the host dies. The host dies with its
supervisor (parent-death signal), and its death ends every teammate in it.
"""

from __future__ import annotations

import contextvars
import logging
import os
import signal
import socket
import sys
import threading
from types import FrameType

import msgspec

from agentproc.channel import open_channel
from agentproc.loop import AgentLoop
from agentproc.tool_sessions import ToolSessions, kill_all
from ipc import trust
from ipc.host_protocol import Command, Ended, Report, Running, Start, Stop, ToolSession, wait_status
from ipc.launch import LaunchSpec
from ipc.osproc import kill_session, set_parent_death_signal, set_process_name
from ipc.wake import Waker

log = logging.getLogger("agentteams.host")
AGENT: contextvars.ContextVar[str] = contextvars.ContextVar("agent", default="host")


class _AgentField(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.agent = AGENT.get()
        return True


class Host:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.send_lock = threading.Lock()
        self.loops: dict[str, AgentLoop] = {}
        self.stopped: dict[str, int] = {}  # name -> the incarnation given up and reported ended (SIGKILL)

    def serve(self) -> int:
        decoder = msgspec.msgpack.Decoder(Command)
        while True:
            try:
                data = self.sock.recv(1 << 20)
            except OSError:
                data = b""
            if not data:
                return 0  # the supervisor is gone
            command = decoder.decode(data)
            if isinstance(command, Start):
                if command.key:  # each teammate signs as itself (they share a process, as tools do)
                    trust.keyring.install(
                        command.spec.team_paths(), command.spec.agent_name, trust.key_from_bytes(command.key)
                    )
                self.start(command.spec)
            else:
                self.stop(command)

    def start(self, spec: LaunchSpec) -> None:
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run, args=(self._run, spec), name=f"at:{spec.agent_name}", daemon=True
        )
        thread.start()

    def _run(self, spec: LaunchSpec) -> None:
        AGENT.set(spec.agent_name)
        set_process_name(f"at:{spec.agent_name}")  # this thread's kernel name (ps -L, top -H)
        self.send(Running(name=spec.agent_name, thread=threading.get_native_id()))
        channel = None
        loop = None
        status = wait_status(1)
        try:
            channel = open_channel(spec)
            loop = AgentLoop(spec, channel)
            name = spec.agent_name
            loop.ctx.tool_sessions = ToolSessions(
                lambda sid, running: self.send(ToolSession(name=name, sid=sid, running=running))
            )
            self.loops[spec.agent_name] = loop
            code = loop.run()
            status = code - 128 if code > 128 and loop.ctx.halt == code else wait_status(code)
        except Exception:
            log.exception("%s raised; it ends, the host goes on", spec.agent_name)
        finally:
            if loop is not None:
                assert loop.ctx.tool_sessions is not None
                loop.ctx.tool_sessions.end()  # what its tools started goes with it
                loop.close()
                if self.loops.get(spec.agent_name) is loop:
                    del self.loops[spec.agent_name]
            if channel is not None:
                channel.close()
        if self.stopped.get(spec.agent_name) != spec.incarnation_ms:  # not given up and reported
            self.send(Ended(name=spec.agent_name, status=status))

    def stop(self, command: Stop) -> None:
        loop = self.loops.get(command.name)
        if loop is None:
            return
        loop.ctx.halt = 128 + command.signal
        if loop.ctx.tool_sessions is not None:  # its tools go now, as with a process's session
            loop.ctx.tool_sessions.kill()
        if command.signal == signal.SIGKILL:  # given up: reported now, whatever its thread does
            self.stopped[command.name] = loop.spec.incarnation_ms  # (a thread that ends after its restart)
            self.loops.pop(command.name, None)
            self.send(Ended(name=command.name, status=command.signal))
        waker = Waker(loop.spec.team_paths().runtime_dir(), linger_ms=200)
        try:
            waker.wake(command.name)  # out of its wait, to see the halt
        finally:
            waker.close()

    def send(self, message: Report) -> None:
        with self.send_lock:
            try:
                self.sock.send(msgspec.msgpack.encode(message))
            except OSError:
                pass  # the supervisor is gone: so are we, in a moment


def _tools_go() -> None:
    """Every process of its teammates' tools' sessions, and of the host's own session but
    itself. A thread's death does not end them, and once the host is gone nobody could."""
    kill_all()
    if os.getsid(0) == os.getpid():
        kill_session(os.getpid(), spare=os.getpid())


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    # The supervisor died (the parent-death signal) or stopped the host: the tools go with it.
    _tools_go()
    os._exit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    fd = int(args[args.index("--fd") + 1])
    supervisor = int(args[args.index("--supervisor-pid") + 1])
    signal.signal(signal.SIGTERM, _on_sigterm)
    set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != supervisor:
        return 1
    set_process_name("at-host")
    # Its threads are teammates: neither they nor their tools (which inherit the mark) ever
    # read the lead's key file, as a teammate process does not.
    trust.keyring.lead_file_allowed = False
    os.environ[trust.UNDER_AGENT_ENV] = "in-process-host"
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_AgentField())
    handler.setFormatter(logging.Formatter("%(asctime)s %(agent)s %(name)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    code = Host(socket.socket(fileno=fd)).serve()
    _tools_go()  # the supervisor is gone
    return code


if __name__ == "__main__":
    sys.exit(main())
