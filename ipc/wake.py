"""The doorbell: one ZeroMQ PAIR per teammate over ipc:// in the private runtime directory.

It stands in for Claude Code's anonymous Unix socketpair. The inbox file is the truth; a
frame here carries nothing that matters if lost, because every teammate also re-reads its
inbox on a slow fallback poll. All ZeroMQ detail stays in this module and ``ipc.control``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Literal, TypeVar

import msgspec
import zmq

from ipc.errors import InvalidInput, StorageError

T = TypeVar("T")
MAX_FRAME_BYTES = 64 * 1024
DEFAULT_FALLBACK_POLL = 5.0
POLL_INTERVAL = 0.5  # Claude Code's inbox poll (seed 000 §5)
WakeMode = Literal["zmq", "poll"]


class Hello(msgspec.Struct, tag=True):
    """Teammate → supervisor, once connected: ready."""

    agent: str
    pid: int


class Ring(msgspec.Struct, tag=True):
    """Teammate → supervisor: I wrote to ``recipient``'s inbox; wake it."""

    recipient: str


class State(msgspec.Struct, tag=True):
    """Teammate → supervisor: the loop went idle or started working."""

    state: Literal["running", "idle"]
    task: str = ""


class Wake(msgspec.Struct, tag=True):
    """Supervisor → teammate: look at your inbox."""


class UserMessage(msgspec.Struct, tag=True):
    """Supervisor → teammate: an in-memory message from the lead (priority 1)."""

    text: str


Frame = Hello | Ring | State | Wake | UserMessage
_encoder = msgspec.msgpack.Encoder()
_decoder: msgspec.msgpack.Decoder[Frame] = msgspec.msgpack.Decoder(Frame)


def encode(frame: Frame) -> bytes:
    return _encoder.encode(frame)


def decode(data: bytes) -> Frame:
    """Strict: anything that is not exactly a frame raises InvalidInput."""
    return strict_decode(_decoder, data, MAX_FRAME_BYTES, "wake frame")


def strict_decode(decoder: msgspec.msgpack.Decoder[T], data: bytes, limit: int, what: str) -> T:
    """Decode one size-bounded wire frame; anything else is InvalidInput, in our words."""
    if len(data) > limit:
        raise InvalidInput(f"{what} of {len(data)} bytes exceeds {limit}")
    try:
        return decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InvalidInput(f"malformed {what}: {exc}") from exc


def socket_path(runtime_dir: Path, agent: str) -> Path:
    # Hashed: agent names may be 64 characters, and sun_path holds only 107 bytes.
    return runtime_dir / f"w-{hashlib.sha256(agent.encode()).hexdigest()[:12]}.sock"


def endpoint(runtime_dir: Path, agent: str) -> str:
    return f"ipc://{socket_path(runtime_dir, agent)}"


def _pair(ctx: zmq.Context[zmq.Socket[bytes]]) -> zmq.Socket[bytes]:
    sock = ctx.socket(zmq.PAIR)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)
    return sock


class SupervisorEnd:
    """The supervisor's end of one teammate's PAIR (bound, so a restarted teammate reconnects)."""

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]], runtime_dir: Path, agent: str) -> None:
        self.agent = agent
        self.path = socket_path(runtime_dir, agent)
        self.socket = _pair(ctx)
        try:
            self.socket.bind(endpoint(runtime_dir, agent))
        except zmq.ZMQError as exc:
            self.socket.close(0)
            raise StorageError(f"cannot bind the wake socket of {agent} at {self.path}: {exc}") from exc
        os.chmod(self.path, 0o600)

    def send(self, frame: Frame) -> bool:
        """Send without blocking; a frame that cannot go now is dropped (the fallback poll covers it)."""
        try:
            self.socket.send(encode(frame), zmq.NOBLOCK)
            return True
        except zmq.ZMQError:
            return False

    def close(self) -> None:
        self.socket.close(0)
        self.path.unlink(missing_ok=True)


class TeammateEnd:
    """A teammate's end: connect, ring, and wait for a wake with a timeout."""

    def __init__(self, endpoint_url: str) -> None:
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context(io_threads=1)
        self.socket = _pair(self.ctx)
        self.socket.connect(endpoint_url)
        self.poller = zmq.Poller()
        self.poller.register(self.socket, zmq.POLLIN)

    def send(self, frame: Frame) -> None:
        try:
            self.socket.send(encode(frame), zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # a doorbell that cannot ring now: the recipient's fallback poll finds the message

    def wait(self, timeout: float) -> list[Frame]:
        """Block up to ``timeout`` s for frames; returns every frame that arrived (maybe none)."""
        frames: list[Frame] = []
        if not self.poller.poll(int(timeout * 1000)):
            return frames
        while True:
            try:
                data = self.socket.recv(zmq.NOBLOCK)
            except zmq.Again:
                return frames
            try:
                frames.append(decode(data))
            except InvalidInput:
                continue  # a bad frame is dropped; the inbox file stays the truth

    def close(self) -> None:
        self.socket.close(0)
        self.ctx.term()
