"""The link between the supervisor and one of its agents: a ZeroMQ ``PAIR`` over ipc:// in
the private runtime directory, standing in for Claude Code's anonymous Unix socketpair.

It carries control and liveness, never messages: ``Hello`` (ready), ``State`` (running or
idle), ``TasksReady`` (tasks someone can claim now; the control socket's request, sent
here without waiting for a reply) from the agent; ``Wake`` (with a task it may claim, or in
a team of files one already claimed for it) and ``UserMessage`` (priority 1 of its loop)
from the supervisor. Frames are
msgspec msgpack, strictly decoded and size-bounded. The supervisor binds, so a restarted
agent simply connects again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import msgspec
import zmq

from ipc.boundary import input_errors, zmq_errors
from ipc.control import TasksReady
from ipc.errors import InvalidInput
from ipc.wake import socket_path

MAX_FRAME_BYTES = 64 * 1024


class Hello(msgspec.Struct, tag=True):
    """Agent → supervisor, once connected: ready."""

    agent: str
    pid: int


class State(msgspec.Struct, tag=True):
    """Agent → supervisor: the loop went idle or started working."""

    state: Literal["running", "idle", "held"]  # held: idle, but it takes no task now
    task: str = ""


class Wake(msgspec.Struct, tag=True):
    """Supervisor → agent: look at your inbox, and claim ``task`` if you can."""

    task: str = ""


class UserMessage(msgspec.Struct, tag=True):
    """Supervisor → agent: an in-memory message from the lead (priority 1)."""

    text: str


Frame = Hello | State | TasksReady | Wake | UserMessage
_encoder = msgspec.msgpack.Encoder()
_decoder: msgspec.msgpack.Decoder[Frame] = msgspec.msgpack.Decoder(Frame)


def encode(frame: Frame) -> bytes:
    return _encoder.encode(frame)


def decode(data: bytes) -> Frame:
    """Strict: anything that is not exactly a frame raises InvalidInput."""
    if len(data) > MAX_FRAME_BYTES:
        raise InvalidInput(f"link frame of {len(data)} bytes exceeds {MAX_FRAME_BYTES}")
    with input_errors("link frame"):
        return _decoder.decode(data)


def link_path(runtime_dir: Path, agent: str) -> Path:
    return socket_path(runtime_dir, agent, kind="l")


def _pair(ctx: zmq.Context[zmq.Socket[bytes]]) -> zmq.Socket[bytes]:
    sock = ctx.socket(zmq.PAIR)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)
    return sock


class _End:
    socket: zmq.Socket[bytes]

    def send(self, frame: Frame) -> bool:
        """Send without blocking; a frame that cannot go now is dropped (the fallback poll
        covers a lost wake; states are sent again on the next change)."""
        try:
            self.socket.send(encode(frame), zmq.NOBLOCK)
            return True
        except zmq.ZMQError:
            return False

    def receive(self) -> list[Frame]:
        """Every frame waiting now; malformed ones are dropped."""
        frames: list[Frame] = []
        while int(self.socket.get(zmq.EVENTS)) & zmq.POLLIN:
            data = self.socket.recv(zmq.NOBLOCK)
            try:
                frames.append(decode(data))
            except InvalidInput:
                continue
        return frames


class SupervisorLink(_End):
    """The supervisor's end of one agent's link (bound)."""

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]], runtime_dir: Path, agent: str) -> None:
        self.agent = agent
        self.path = link_path(runtime_dir, agent)
        self.socket = _pair(ctx)
        with zmq_errors(f"cannot bind the link of {agent} at {self.path}"):
            try:
                self.socket.bind(f"ipc://{self.path}")
            except zmq.ZMQError:
                self.socket.close(0)
                raise
        os.chmod(self.path, 0o600)

    def close(self) -> None:
        self.socket.close(0)
        self.path.unlink(missing_ok=True)


class AgentLink(_End):
    """An agent's end of its link (connected)."""

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]], runtime_dir: Path, agent: str) -> None:
        self.socket = _pair(ctx)
        self.socket.connect(f"ipc://{link_path(runtime_dir, agent)}")

    def close(self) -> None:
        self.socket.close(0)
