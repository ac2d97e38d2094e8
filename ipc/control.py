"""The supervisor's control socket: a ZeroMQ ROUTER for the CLI, the Python API and agents.

Requests and replies are msgspec msgpack frames, strictly decoded and size-bounded. Each
request carries an id and names the Struct its reply decodes to. The server answers every
request exactly once, possibly later (a spawn is answered when the teammate is ready), and
the supervisor handles requests one at a time in arrival order, so a command sent while
another runs is queued, never refused.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import msgspec
import zmq

from ipc.boundary import input_errors, zmq_errors
from ipc.errors import (
    AgentTeamsError,
    Conflict,
    InvalidInput,
    LimitReached,
    NotFound,
    NotRunning,
    SupervisorError,
    Timeout,
)
from ipc.options import SubagentOptions, TeammateOptions
from ipc.poller import shut
from ipc.replies import SpawnReply, StopReply, SubagentReply, TeamStatus

MAX_REQUEST_BYTES = 256 * 1024
R = TypeVar("R", bound=msgspec.Struct)


class Ack(msgspec.Struct, kw_only=True):
    """A reply that says only: done."""

    done: bool = True


class WakeReply(msgspec.Struct, kw_only=True):
    woken: list[str] = []


class _Request(msgspec.Struct, tag=True, kw_only=True):
    id: str
    Reply: ClassVar[type[msgspec.Struct]] = Ack


class Spawn(_Request):
    options: TeammateOptions
    Reply: ClassVar[type[msgspec.Struct]] = SpawnReply


class Restart(_Request):
    """Start a member of the config again (after it failed or the supervisor died)."""

    name: str
    Reply: ClassVar[type[msgspec.Struct]] = SpawnReply


class TasksReady(_Request):
    """Tasks that can be claimed now: the supervisor wakes one idle teammate for each. The
    one "tasks ready" message: clients send it here, agents over their link (no reply)."""

    ids: list[str] = []
    rung: str = ""  # the on-call teammate the sender already rang for the first of them
    ahead: bool = False  # ... while it made that task: a task no one can have started before
    Reply: ClassVar[type[msgspec.Struct]] = WakeReply


class Push(_Request):
    """An in-memory user message to a teammate (priority 1 of its loop)."""

    name: str
    text: str


class Shutdown(_Request):
    name: str
    force: bool = False
    reason: str = "The lead asked you to shut down."
    grace: float = 10.0
    Reply: ClassVar[type[msgspec.Struct]] = StopReply


class Status(_Request):
    Reply: ClassVar[type[msgspec.Struct]] = TeamStatus


class Down(_Request):
    grace: float = 5.0


class AttachLead(_Request):
    """A lead agent (pid) takes over the lead's inbox: plans, permissions and reports are
    its to answer while it runs; the supervisor watches the pid and takes them back after."""

    pid: int


class WatchMember(_Request):
    """A member that is an outside client (an MCP session) joined, served by process
    ``pid``: the supervisor watches the pid, and settles the member (tasks released, marked
    inactive) if it ends without leaving."""

    name: str
    pid: int


class SpawnSubagent(_Request):
    """Start a subagent for ``options.parent``: its own process, not a member of the team;
    stopped with its parent."""

    options: SubagentOptions
    Reply: ClassVar[type[msgspec.Struct]] = SubagentReply


class StopSubagent(_Request):
    subagent: str


class SessionSent(msgspec.Struct, kw_only=True):
    msg_id: str


class SessionSend(_Request):
    """A message from the lead's side to a Claude Code session, sent by the supervisor (the
    process Claude Code knows the lead's address by; :mod:`ipc.cc_peer`)."""

    sender: str
    to: str
    text: str
    summary: str
    Reply: ClassVar[type[msgspec.Struct]] = SessionSent


Request = (
    Spawn
    | Restart
    | TasksReady
    | Push
    | Shutdown
    | Status
    | Down
    | AttachLead
    | WatchMember
    | SpawnSubagent
    | StopSubagent
    | SessionSend
)


class Reply(msgspec.Struct, kw_only=True):
    id: str
    ok: bool
    result: msgspec.Raw = msgspec.Raw(b"\xc0")  # msgpack nil
    error: str = ""
    kind: str = ""  # the refusal's class, when the caller's doors tell it apart (see REFUSALS)


# Refusals a door answers by their class (HTTP 400, 404, 409): raised again as themselves;
# any other error from the supervisor is a SupervisorError.
REFUSALS: dict[str, type[AgentTeamsError]] = {
    c.__name__: c for c in (InvalidInput, NotFound, Conflict, LimitReached)
}


def kind_of(exc: AgentTeamsError) -> str:
    """The refusal class ``exc`` is sent as: its own, or the nearest of REFUSALS it derives from."""
    return next((c.__name__ for c in type(exc).__mro__ if c.__name__ in REFUSALS), "")


_request_decoder: msgspec.msgpack.Decoder[Request] = msgspec.msgpack.Decoder(Request)
_reply_decoder = msgspec.msgpack.Decoder(Reply)
_encoder = msgspec.msgpack.Encoder()
_ids = itertools.count(1)


def new_id() -> str:
    return f"{os.getpid()}-{next(_ids)}"


def decode_request(data: bytes) -> Request:
    if len(data) > MAX_REQUEST_BYTES:
        raise InvalidInput(f"request of {len(data)} bytes exceeds {MAX_REQUEST_BYTES}")
    with input_errors("request"):
        return _request_decoder.decode(data)


def request_id_of(data: bytes) -> str:
    """Best effort: the id of a request that failed to decode, so the error can name it."""
    try:
        raw = msgspec.msgpack.decode(data)
    except msgspec.DecodeError:
        return ""
    return str(raw.get("id", "")) if isinstance(raw, dict) else ""


def encode(obj: msgspec.Struct) -> bytes:
    return _encoder.encode(obj)


def control_path(runtime_dir: Path) -> Path:
    return runtime_dir / "control.sock"


def running_pid(runtime_dir: Path) -> int | None:
    """The pid of the team's running supervisor, or None (-1: running, pid unknown). The
    daemon holds a flock on ``supervisor.lock`` for its whole life, so a stale pid file is
    never believed."""
    lock = runtime_dir / "supervisor.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            return int((runtime_dir / "supervisor.pid").read_text())
        except (OSError, ValueError):
            return -1
    finally:
        os.close(fd)
    return None


@dataclass(frozen=True)
class Caller:
    """Who is waiting for the answer to one request."""

    identity: bytes
    request_id: str


class ControlServer:
    """The supervisor's end: receives requests, answers each once (now or later)."""

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]], runtime_dir: Path) -> None:
        self.path = control_path(runtime_dir)
        self.path.unlink(missing_ok=True)
        self.socket = ctx.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.MAXMSGSIZE, MAX_REQUEST_BYTES)
        self.socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
        with zmq_errors(f"cannot bind the control socket at {self.path}"):
            try:
                self.socket.bind(f"ipc://{self.path}")
            except zmq.ZMQError:
                self.socket.close(0)
                raise
        os.chmod(self.path, 0o600)

    def receive(self) -> list[tuple[Caller, Request]]:
        """Every request waiting now. A malformed one is answered with its error here."""
        out: list[tuple[Caller, Request]] = []
        while True:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return out
            if len(frames) != 2:
                continue  # not a DEALER speaking our protocol: drop
            identity, data = frames
            try:
                request = decode_request(data)
            except InvalidInput as exc:
                self.fail(Caller(identity, request_id_of(data)), exc.message)
                continue
            out.append((Caller(identity, request.id), request))

    def _send(self, caller: Caller, reply: Reply) -> None:
        try:
            self.socket.send_multipart([caller.identity, encode(reply)], zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # the caller went away: nobody to tell

    def answer(self, caller: Caller, result: msgspec.Struct | None = None) -> None:
        payload = msgspec.Raw(encode(result if result is not None else Ack()))
        self._send(caller, Reply(id=caller.request_id, ok=True, result=payload))

    def fail(self, caller: Caller, error: str, kind: str = "") -> None:
        self._send(caller, Reply(id=caller.request_id, ok=False, error=error, kind=kind))

    def close(self) -> None:
        self.socket.close(0)
        self.path.unlink(missing_ok=True)


class ControlClient:
    """A DEALER connected to one team's supervisor."""

    def __init__(self, runtime_dir: Path) -> None:
        path = control_path(runtime_dir)
        if not path.exists():
            raise NotRunning(
                f"no supervisor is running for this team (no {path}); start it with 'agentteams up TEAM'"
            )
        self.runtime_dir = runtime_dir
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context(io_threads=1)
        self.socket = self.ctx.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(f"ipc://{path}")
        self._finalizer = weakref.finalize(self, shut, self.ctx, [self.socket], 0)

    def call(self, request: _Request, timeout: float = 30.0) -> Any:
        """Send and wait for the reply with the same id, decoded as ``request.Reply``; raises
        the refusal (or SupervisorError) of an error reply, Timeout when there is none in time."""
        data = encode(request)
        if len(data) > MAX_REQUEST_BYTES:  # ZeroMQ would drop it unseen, and the call wait out its timeout
            raise InvalidInput(
                f"the {type(request).__name__.lower()} request is {len(data)} bytes; the supervisor takes "
                f"at most {MAX_REQUEST_BYTES}: shorten its text (a long message goes to the inbox, a long "
                "prompt in a file the teammate reads)"
            )
        with zmq_errors("cannot reach the supervisor"):
            self.socket.send(data)
        deadline = time.monotonic() + timeout
        name = type(request).__name__.lower()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout(f"the supervisor did not answer {name} within {timeout:g}s")
            # A second at a time: a supervisor killed before it answered is seen gone then,
            # not at the end of a wait that may be minutes long.
            if not self.socket.poll(int(min(remaining, 1.0) * 1000) + 1):
                if running_pid(self.runtime_dir) is None:
                    raise NotRunning(f"the supervisor ended before it answered {name}")
                continue
            try:
                reply = _reply_decoder.decode(self.socket.recv())
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            if reply.id != request.id:
                continue  # a late reply to an earlier, timed-out call
            if not reply.ok:
                raise REFUSALS.get(reply.kind, SupervisorError)(reply.error)
            with input_errors("supervisor reply"):
                return msgspec.msgpack.decode(reply.result, type=type(request).Reply)

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
