"""The resident door's program (``python -m supervisor.resident``), started by the team's
supervisor with the door socket already bound and listening (its descriptor is inherited):
the supervisor binds it when the team comes up and starts this program on the first
connection, so a team that never uses it pays nothing.

Each connection is one request and one reply, JSON lines (:mod:`ipc.resident`), read on a
thread of its own with a deadline (a slow client holds up nobody), run through the table of
operations one at a time on one long-lived team handle, exactly as the command line runs it:
a send is marked a person's as the command line's is. A peer of another uid is refused
(SO_PEERCRED; the socket is 0600 in a 0700 directory besides). It exits when its parent
dies (PR_SET_PDEATHSIG), when stopped (SIGTERM: the requests under way finish first), and
after ``IDLE_EXIT`` seconds without a connection (the supervisor starts it again on the
next one).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path

import msgspec

from ipc import agent_side
from ipc import resident as wire
from ipc.errors import AgentTeamsError
from ipc.osproc import set_parent_death_signal, set_process_name
from ipc.paths import normalise_team_name, resolve_root
from supervisor.client import operations as ops
from supervisor.client.handle import TeamHandle

log = logging.getLogger("agentteams.resident")
READ_DEADLINE = 5.0  # a client writes its request as soon as it connects
IDLE_EXIT = 600.0
DRAIN = 10.0  # how long a stop waits for the requests under way
ERROR, INTERNAL = 1, 70  # the command line's exit codes (supervisor.cli.exits)


def peer(conn: socket.socket) -> tuple[int, int]:
    """The pid and uid of the process at the other end (the kernel's word: SO_PEERCRED)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    return int(pid), int(uid)


def read_line(conn: socket.socket, deadline: float) -> bytes:
    data = bytearray()
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        conn.settimeout(remaining)
        chunk = conn.recv(65536)
        if not chunk:  # a client that could not send its whole line takes it as never sent
            raise ValueError("the request ended before its line did")
        data += chunk
        if len(data) > wire.MAX_REQUEST:
            raise ValueError(f"a request of more than {wire.MAX_REQUEST} bytes")
    return bytes(data).split(b"\n", 1)[0]


class DoorHandle(TeamHandle):
    """The team's handle as the door holds it. A creation tells the supervisor of the new
    tasks (it rings the on-call teammate, and the supervisor wakes others for the rest) after
    the reply has gone, not before: the command line's own handle waits for that word lest
    its process exit first, which the door outlives, so the caller need not wait for it."""

    def __init__(self, name: str, root: Path) -> None:
        self.later: list[tuple[list[str], str]] = []
        super().__init__(name, root=root)

    def _tasks_ready(self, ids: list[str], rung: str = "") -> None:
        self.later.append((ids, rung))

    def tell_later(self) -> None:
        taken, self.later = self.later, []
        for ids, rung in taken:
            try:
                super()._tasks_ready(ids, rung)
            except Exception:  # the teammates' fallback poll finds the tasks
                log.exception("telling of tasks %s failed", ids)


class Door:
    def __init__(self, listener: socket.socket, team: TeamHandle) -> None:
        self.listener = listener
        self.team = team
        self.lock = threading.Lock()  # the handle runs one request at a time
        self.workers: set[threading.Thread] = set()
        self.stopping = False

    # ------------------------------------------------------------ one request

    def answer(self, line: bytes, caller: int | None = None) -> wire.Reply:
        try:
            request = msgspec.json.decode(line, type=wire.Request)
        except msgspec.MsgspecError as exc:
            return wire.Reply(ok=False, error=f"a bad request to the resident door: {exc}", exit=ERROR)
        if request.v != wire.VERSION or request.op not in wire.SERVED:
            return wire.Reply(ok=False, fallback=f"not served here: {request.op} (version {request.v})")
        try:
            ours = resolve_root(request.root) == self.team.root
            ours = ours and normalise_team_name(request.team) == self.team.name
        except AgentTeamsError:
            ours = False
        if not ours:
            return wire.Reply(ok=False, fallback="another team's door")
        op = ops.TABLE[request.op]
        try:
            args = msgspec.convert(request.args, op.input)
        except msgspec.ValidationError as exc:  # the full path refuses it in the command line's words
            return wire.Reply(ok=False, fallback=f"not taken here: {exc}")
        token = agent_side.CALLER.set(caller)  # who it acts for: an agent's tool never as the lead
        try:
            with self.lock:
                self.team.store.read()  # NotFound for a team that went away, as the command line says
                result = op(self.team, args, request.actor)
        except AgentTeamsError as exc:
            return wire.Reply(ok=False, error=exc.message, exit=ERROR)
        except Exception as exc:  # a bug of ours: the caller hears it, the door goes on
            log.exception("request %s failed", request.op)
            return wire.Reply(ok=False, error=f"{type(exc).__name__}: {exc}", exit=INTERNAL)
        finally:
            agent_side.CALLER.reset(token)
        return wire.Reply(ok=True, result=msgspec.to_builtins(result))

    def handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                pid, uid = peer(conn)
                if uid != os.getuid():
                    log.warning("refused a connection from uid %d", uid)
                    reply = wire.Reply(
                        ok=False, error="refused: this door serves its own user only", exit=ERROR
                    )
                else:
                    reply = self.answer(read_line(conn, time.monotonic() + READ_DEADLINE), pid)
                conn.settimeout(READ_DEADLINE)
                conn.sendall(msgspec.json.encode(reply) + b"\n")
            except (OSError, ValueError) as exc:  # TimeoutError is an OSError
                log.warning("dropped a connection: %s", exc or type(exc).__name__)
            finally:
                if isinstance(self.team, DoorHandle):
                    with self.lock:
                        self.team.tell_later()
                self.workers.discard(threading.current_thread())

    # ------------------------------------------------------------ the loop

    def serve(self, wakeup: int, idle: float = IDLE_EXIT) -> None:
        """Accept until stopped (a byte on ``wakeup``) or idle for ``idle`` seconds."""
        last = time.monotonic()
        while not self.stopping:
            ready, _, _ = select.select(
                [self.listener.fileno(), wakeup], [], [], max(0.0, last + idle - time.monotonic())
            )
            if wakeup in ready:
                os.read(wakeup, 512)
                continue
            if not ready:
                if not self.workers:
                    log.info("idle for %.0f s: exiting until the next connection", idle)
                    return
                last = time.monotonic()
                continue
            last = time.monotonic()
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                continue
            worker = threading.Thread(target=self.handle, args=(conn,), daemon=True)
            self.workers.add(worker)
            worker.start()

    def drain(self) -> None:
        deadline = time.monotonic() + DRAIN
        for worker in list(self.workers):
            worker.join(max(0.0, deadline - time.monotonic()))


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    given = dict(zip(args[::2], args[1::2], strict=False))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s resident %(message)s", stream=sys.stderr)
    set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != int(given["--supervisor-pid"]):
        return 0  # the supervisor died before the kernel could be told to tell us
    set_process_name("at-door")
    listener = socket.socket(fileno=int(given["--fd"]))
    listener.setblocking(False)
    door = Door(listener, DoorHandle(given["--team"], root=Path(given["--root"])))
    if door.team.state.engine is not None:
        from ipc.engine import connection

        connection.impatient()  # its caller waits only so long: an engine away is an error at once
    wake_read, wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_write)

    def stop(signum: int, frame: object) -> None:
        door.stopping = True

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    log.info("serving %s (pid %d)", door.team.name, os.getpid())
    if "--ready" in given:  # the supervisor's word that we started: a door that exits before could not
        with contextlib.suppress(OSError):
            os.write(int(given["--ready"]), b".")
        with contextlib.suppress(OSError):
            os.close(int(given["--ready"]))
    try:
        door.serve(wake_read)
    finally:
        door.drain()
        with contextlib.suppress(Exception):
            door.team.close()
    return 0
