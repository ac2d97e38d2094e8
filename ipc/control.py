"""The supervisor's control socket: a ZeroMQ ROUTER for the CLI and the Python API.

Requests and replies are msgspec msgpack frames, strictly decoded and size-bounded. Each
request carries an id; the supervisor answers every request exactly once, possibly later
(a spawn is answered when the teammate is ready), and handles requests one at a time in
arrival order, so a command sent while another runs is queued, never refused.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import msgspec
import zmq

from ipc.errors import NotRunning, SupervisorError
from ipc.wake import strict_decode

MAX_REQUEST_BYTES = 256 * 1024


class Spawn(msgspec.Struct, tag=True, kw_only=True):
    id: str
    name: str
    prompt: str = ""
    model: str = "offline"
    agent_type: str = "general-purpose"
    plan_mode_required: bool = False
    permission_mode: str = ""
    cwd: str = ""


class Restart(msgspec.Struct, tag=True, kw_only=True):
    """Start a member of the config again (after it failed or the supervisor died)."""

    id: str
    name: str


class WakeAgent(msgspec.Struct, tag=True, kw_only=True):
    id: str
    name: str


class Push(msgspec.Struct, tag=True, kw_only=True):
    """An in-memory user message to a teammate (priority 1 of its loop)."""

    id: str
    name: str
    text: str


class Shutdown(msgspec.Struct, tag=True, kw_only=True):
    id: str
    name: str
    force: bool = False
    reason: str = "The lead asked you to shut down."
    grace: float = 10.0


class Status(msgspec.Struct, tag=True, kw_only=True):
    id: str


class Down(msgspec.Struct, tag=True, kw_only=True):
    id: str
    grace: float = 5.0


Request = Spawn | Restart | WakeAgent | Push | Shutdown | Status | Down


class Reply(msgspec.Struct, kw_only=True):
    id: str
    ok: bool
    result: Any = None
    error: str = ""


_request_decoder: msgspec.msgpack.Decoder[Request] = msgspec.msgpack.Decoder(Request)
_reply_decoder = msgspec.msgpack.Decoder(Reply)
_encoder = msgspec.msgpack.Encoder()


def decode_request(data: bytes) -> Request:
    return strict_decode(_request_decoder, data, MAX_REQUEST_BYTES, "request")


def request_id_of(data: bytes) -> str:
    """Best effort: the id of a request that failed to decode, so the error reply can name it."""
    try:
        raw = msgspec.msgpack.decode(data)
    except msgspec.DecodeError:
        return ""
    return str(raw.get("id", "")) if isinstance(raw, dict) else ""


def encode(obj: Request | Reply) -> bytes:
    return _encoder.encode(obj)


def control_path(runtime_dir: Path) -> Path:
    return runtime_dir / "control.sock"


def bind_router(ctx: zmq.Context[zmq.Socket[bytes]], runtime_dir: Path) -> zmq.Socket[bytes]:
    path = control_path(runtime_dir)
    path.unlink(missing_ok=True)
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_REQUEST_BYTES)
    sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
    try:
        sock.bind(f"ipc://{path}")
    except zmq.ZMQError as exc:
        sock.close(0)
        raise SupervisorError(f"cannot bind the control socket at {path}: {exc}") from exc
    os.chmod(path, 0o600)
    return sock



class ControlClient:
    """A DEALER connected to one team's supervisor."""

    def __init__(self, runtime_dir: Path) -> None:
        path = control_path(runtime_dir)
        if not path.exists():
            raise NotRunning(f"no supervisor is running for this team (no {path}); start it with 'agentteams up TEAM'")
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context(io_threads=1)
        self.socket = self.ctx.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.connect(f"ipc://{path}")

    def notify(self, request: Request) -> None:
        """Send without waiting: for doorbells, whose reply nobody needs. A reply that comes
        back anyway is skipped by the next :meth:`call`, which matches ids."""
        try:
            self.socket.send(encode(request), zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # the doorbell could not ring: the recipient's fallback poll finds the message

    def call(self, request: Request, timeout: float = 30.0) -> Any:
        """Send and wait for the reply with the same id; raises SupervisorError on an error reply."""
        self.socket.send(encode(request))
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.socket.poll(int(remaining * 1000)):
                raise SupervisorError(f"the supervisor did not answer {type(request).__name__.lower()} within {timeout:g}s")
            try:
                reply = _reply_decoder.decode(self.socket.recv())
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            if reply.id != request.id:
                continue  # a late reply to an earlier, timed-out call
            if not reply.ok:
                raise SupervisorError(reply.error)
            return reply.result

    def close(self) -> None:
        self.socket.close(0)
        self.ctx.term()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
