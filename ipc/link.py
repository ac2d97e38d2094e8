"""The links between the supervisor and its agents: one ZeroMQ ``ROUTER`` the supervisor
binds over ipc:// in the private runtime directory, and a ``DEALER`` per agent connected to
it with the agent's routing id, standing in for Claude Code's anonymous Unix socketpairs.

One socket, not one per agent: the supervisor's loop polls it whatever the team's size (a
poll over 64 sockets costs 28 µs, over 4 costs 2), and each agent costs it two files fewer.
The routing id is a hash of the agent's name, as ZeroMQ takes at most 255 bytes; a
restarted agent connects again under the same id and takes it over (``ROUTER_HANDOVER``).
Any process of the team's user could connect under an agent's id, as it could to that
agent's own socket before: the runtime directory is the user's, mode 0700.

The links carry control and liveness, never messages: ``Hello`` (ready), ``State``
(running or idle), ``Waiting`` (a turn now waits on another process, or computes again),
``TasksReady`` (tasks someone can claim now; the control socket's request, sent here
without waiting for a reply) from the agent; ``Wake`` (with a task it may claim, or in a
team of files one already claimed for it) and ``UserMessage`` (priority 1 of its loop)
from the supervisor. Frames are msgspec msgpack, strictly decoded and size-bounded.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Literal

import msgspec
import zmq

from ipc.boundary import input_errors, zmq_errors
from ipc.control import TasksReady
from ipc.errors import InvalidInput

MAX_FRAME_BYTES = 64 * 1024
RECEIVED_AT_ONCE = 256  # frames taken per call: the loop's other sources get their turn


class Hello(msgspec.Struct, tag=True):
    """Agent → supervisor, once connected: ready."""

    agent: str
    pid: int


class State(msgspec.Struct, tag=True):
    """Agent → supervisor: the loop went idle or started working."""

    state: Literal["running", "idle", "held"]  # held: idle, but it takes no task now
    task: str = ""


class Waiting(msgspec.Struct, tag=True):
    """Agent → supervisor, within a turn: it now waits on another process (a command, a
    subagent, an answer), or (False) computes again. The supervisor's cap on turns at once
    counts the turns that compute."""

    waiting: bool


class Wake(msgspec.Struct, tag=True):
    """Supervisor → agent: look at your inbox, and claim ``task`` if you can."""

    task: str = ""


class UserMessage(msgspec.Struct, tag=True):
    """Supervisor → agent: an in-memory message from the lead (priority 1)."""

    text: str


Frame = Hello | State | Waiting | TasksReady | Wake | UserMessage
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


def links_path(runtime_dir: Path) -> Path:
    return runtime_dir / "links.sock"


def routing_id(agent: str) -> bytes:
    return hashlib.sha256(agent.encode()).digest()[:16]


def _socket(ctx: zmq.Context[zmq.Socket[bytes]], kind: int) -> zmq.Socket[bytes]:
    sock = ctx.socket(kind)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)
    return sock


def _decoded(data: bytes) -> Frame | None:
    try:
        return decode(data)
    except InvalidInput:
        return None  # malformed: dropped


class SupervisorLinks:
    """The supervisor's end of every agent's link (bound); frames from an agent not opened
    here are dropped."""

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]], runtime_dir: Path) -> None:
        self.path = links_path(runtime_dir)
        self.socket = _socket(ctx, zmq.ROUTER)
        self.socket.setsockopt(zmq.ROUTER_MANDATORY, 1)  # a send to no one fails, not vanishes
        self.socket.setsockopt(zmq.ROUTER_HANDOVER, 1)
        self.names: dict[bytes, str] = {}  # routing id → agent
        self.ids: dict[str, bytes] = {}  # and back
        with zmq_errors(f"cannot bind the agents' links at {self.path}"):
            try:
                self.socket.bind(f"ipc://{self.path}")
            except zmq.ZMQError:
                self.socket.close(0)
                raise
        os.chmod(self.path, 0o600)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, agent: object) -> bool:
        return agent in self.ids

    def open(self, agent: str) -> None:
        self.ids[agent] = routing_id(agent)
        self.names[self.ids[agent]] = agent

    def drop(self, agent: str) -> bool:
        gone = self.ids.pop(agent, None)
        return gone is not None and self.names.pop(gone, None) is not None

    def send(self, agent: str, frame: Frame) -> bool:
        """Send without blocking; False for an agent not opened or not connected now, or a
        frame that cannot go now (the fallback poll covers a lost wake)."""
        to = self.ids.get(agent)
        if to is None:
            return False
        try:
            self.socket.send_multipart([to, encode(frame)], zmq.NOBLOCK)
            return True
        except zmq.ZMQError:
            return False

    def receive(self) -> list[tuple[str, Frame]]:
        """Frames waiting now (up to :data:`RECEIVED_AT_ONCE`), each with its agent."""
        frames: list[tuple[str, Frame]] = []
        for _ in range(RECEIVED_AT_ONCE):  # dropped frames count too: a flood ends the call
            if not int(self.socket.get(zmq.EVENTS)) & zmq.POLLIN:
                break
            parts = self.socket.recv_multipart(zmq.NOBLOCK)
            agent = self.names.get(parts[0]) if len(parts) == 2 else None
            frame = _decoded(parts[-1]) if agent is not None else None
            if agent is not None and frame is not None:
                frames.append((agent, frame))
        return frames

    def close(self) -> None:
        self.socket.close(0)
        self.path.unlink(missing_ok=True)


class AgentLink:
    """An agent's end of its link (connected)."""

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]], runtime_dir: Path, agent: str) -> None:
        self.socket = _socket(ctx, zmq.DEALER)
        self.socket.setsockopt(zmq.ROUTING_ID, routing_id(agent))
        self.socket.connect(f"ipc://{links_path(runtime_dir)}")

    def send(self, frame: Frame) -> bool:
        """Send without blocking; a frame that cannot go now is dropped (states are sent
        again on the next change)."""
        try:
            self.socket.send(encode(frame), zmq.NOBLOCK)
            return True
        except zmq.ZMQError:
            return False

    def receive(self) -> list[Frame]:
        """Every frame waiting now; malformed ones are dropped."""
        frames: list[Frame] = []
        while int(self.socket.get(zmq.EVENTS)) & zmq.POLLIN:
            frame = _decoded(self.socket.recv(zmq.NOBLOCK))
            if frame is not None:
                frames.append(frame)
        return frames

    def close(self) -> None:
        self.socket.close(0)
