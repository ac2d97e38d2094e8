"""The doorbell: one hop from any sender straight to the recipient.

Each agent that can be woken binds a ZeroMQ ``PULL`` socket at a path in the team's private
runtime directory (:func:`socket_path`); a sender writes the recipient's inbox first, then
sends an empty frame from a ``PUSH`` socket it keeps (:class:`Waker`). The frame carries
nothing that matters: the inbox file is the truth, and every agent also re-reads its inbox
on a slow fallback poll, so a lost wake costs latency, never a message.

A wake must not be lost in the normal case, even from a process that exits right after
sending (the CLI): sockets linger until their frames are out, and a recipient that is not
listening (no socket file) is not waited for. All ZeroMQ detail stays in ``ipc``.
"""

from __future__ import annotations

import hashlib
import os
import re
import weakref
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import zmq

from ipc.boundary import zmq_errors
from ipc.poller import shut

DEFAULT_LINGER_MS = 1000
# The lead agent's own doorbell. The supervisor always owns team-lead's (it is the lead's
# runtime when no lead agent runs) and passes each wake on to a lead agent that runs.
LEAD_AGENT = "team-lead.agent"
_HWM = 64  # a doorbell needs no queue: one frame waiting is as good as many
_TASK_NOTE = re.compile(rb"[0-9]{1,12}")  # what a ring may name: a task id, nothing else
# Sockets a Waker keeps connected (the least recently rung closed past it): an agent that
# broadcasts to a team of thousands must not hold a socket, and two files, for each.
KEPT_SOCKETS = 128


# The idle teammate the supervisor would wake for the next ready task, named in a file of
# the runtime directory: a process that makes a task rings it at once (one hop, not two
# through the supervisor) and tells the supervisor it did.
ON_CALL = "on-call"


def on_call(runtime_dir: Path) -> str:
    """The on-call teammate's name, or "" (no one idle, or the team is not up)."""
    try:
        with open(runtime_dir / ON_CALL, "rb") as f:
            return f.read().strip().decode()
    except (OSError, UnicodeDecodeError):
        return ""


# Non-empty while the supervisor holds ready tasks to hand out (it keeps a few turns going at
# once): a teammate's fallback poll then leaves them to it instead of claiming one itself.
QUEUED = "queued"


def queued(runtime_dir: Path) -> bool:
    """Whether the supervisor holds ready tasks back for its hand-out."""
    try:
        with open(runtime_dir / QUEUED, "rb") as f:
            return bool(f.read(64).strip())  # an emptied file is padded with a space
    except OSError:
        return False


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def socket_path(runtime_dir: Path, agent: str, kind: str = "w") -> Path:
    """An agent's socket file of one kind: ``w`` its doorbell, ``c`` a claude teammate's
    courier, ``m`` that ``claude``'s own messaging socket."""
    # Hashed: agent names may be 64 characters, and sun_path holds only 107 bytes.
    return runtime_dir / f"{kind}-{_digest(agent)[:12]}.sock"


def reply_socket_path(runtime_dir: Path, agent: str, sender: str) -> Path:
    """Where a claude teammate's courier hears ``claude``'s answers to ``sender``: named
    after the agent first, so :func:`socket_files` finds every one of them."""
    return runtime_dir / f"r-{_digest(agent)[:8]}{_digest(sender)[:10]}.sock"  # 106 bytes at most


def socket_files(runtime_dir: Path, agent: str) -> list[Path]:
    """Every socket file an agent's process may have bound in the runtime directory."""
    replies = sorted(runtime_dir.glob(f"r-{_digest(agent)[:8]}??????????.sock"))
    return [socket_path(runtime_dir, agent, kind) for kind in "wcm"] + replies


class Doorbell(Protocol):
    """What a sender rings after writing an inbox: a :class:`Waker`, or anything that
    wakes an agent by name (False: it is not listening)."""

    def wake(self, agent: str) -> bool: ...


class LazyWaker:
    """A :class:`Waker` made on the first ring, so a process that never sends pays nothing
    for sockets. ``runtime_dir`` gives None while the team has no runtime directory: then
    nobody can be listening, and nothing is created."""

    def __init__(self, runtime_dir: Callable[[], Path | None]) -> None:
        self._runtime_dir = runtime_dir
        self.waker: Waker | None = None

    def wake(self, agent: str, note: bytes = b"") -> bool:
        if self.waker is None:
            runtime = self._runtime_dir()
            if runtime is None:
                return False
            self.waker = Waker(runtime)
        return self.waker.wake(agent, note)

    def prime(self, agent: str) -> None:
        """Make the socket to ``agent`` now, so that a first ring made under a lock does not
        start ZeroMQ there (its context, I/O thread and connect: about a millisecond)."""
        if self.waker is None:
            runtime = self._runtime_dir()
            if runtime is None:
                return
            self.waker = Waker(runtime)
        self.waker.socket_for(agent)

    def close(self) -> None:
        """Close, letting rings still in flight go out."""
        if self.waker is not None:
            self.waker.close()
            self.waker = None


class WakeListener:
    """An agent's own doorbell (bound, so a restarted agent takes it over)."""

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]], runtime_dir: Path, agent: str) -> None:
        self.path = socket_path(runtime_dir, agent)
        self.socket = ctx.socket(zmq.PULL)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVHWM, _HWM)
        self.socket.setsockopt(zmq.MAXMSGSIZE, 1024)
        with zmq_errors(f"cannot bind the wake socket of {agent} at {self.path}"):
            try:
                self.socket.bind(f"ipc://{self.path}")
            except zmq.ZMQError:
                self.socket.close(0)
                raise
        os.chmod(self.path, 0o600)
        self.notes: list[str] = []  # tasks named by rings (see take_notes)

    def drain(self) -> int:
        """Take every waiting frame; returns how many there were. (Asks the socket rather
        than reading until zmq.Again: an exception is dear on the hot path.)"""
        count = 0
        while int(self.socket.get(zmq.EVENTS)) & zmq.POLLIN:
            frame = self.socket.recv(zmq.NOBLOCK)
            count += 1
            if frame and _TASK_NOTE.fullmatch(frame):
                self.notes = [*self.notes[-(_HWM - 1) :], frame.decode()]
        return count

    def take_notes(self) -> list[str]:
        """The task ids rings named since the last call: a process that makes a task rings
        the on-call teammate with its id, so it tries that task first instead of looking
        through the list. Only a hint: whoever takes it still claims it under the lock, and
        the ring may come before the task's file (its maker rings while it holds the list's
        lock, before the write), so a task not there yet is looked for again under that lock."""
        notes, self.notes = self.notes, []
        return notes

    def close(self) -> None:
        self.socket.close(0)
        self.path.unlink(missing_ok=True)


class Waker:
    """Rings agents' doorbells from any process; keeps a connected socket for each of the
    ``kept`` recipients rung most recently (None: for every recipient)."""

    def __init__(
        self,
        runtime_dir: Path,
        *,
        linger_ms: int = DEFAULT_LINGER_MS,
        ctx: zmq.Context[zmq.Socket[bytes]] | None = None,
        kept: int | None = KEPT_SOCKETS,
    ) -> None:
        self.runtime_dir = runtime_dir
        self.linger_ms = linger_ms
        self.kept = kept
        self._own_ctx = ctx is None
        self.ctx: zmq.Context[zmq.Socket[bytes]] | None = ctx
        self.sockets: OrderedDict[str, zmq.Socket[bytes]] = OrderedDict()
        self._finalizer: weakref.finalize[..., Waker] | None = None

    def wake(self, agent: str, note: bytes = b"") -> bool:
        """Wake ``agent``; False if it is not listening (nothing to wait for), or if no
        socket can be had (out of files: the recipient's fallback poll reads it later).
        ``note``: a task's id, for the on-call teammate (:meth:`WakeListener.take_notes`)."""
        sock = self.socket_for(agent)
        if sock is None:
            return False
        try:
            sock.send(note, zmq.NOBLOCK)
            return True
        except zmq.ZMQError:
            return False  # its queue is full: it has plenty of wakes to read already

    def socket_for(self, agent: str) -> zmq.Socket[bytes] | None:
        """The socket connected to ``agent``'s doorbell, made if need be; None if it is not
        listening or no socket can be had."""
        sock = self.sockets.get(agent)
        if sock is not None:
            self.sockets.move_to_end(agent)
            return sock
        path = socket_path(self.runtime_dir, agent)
        if not path.exists():
            return None
        sock = self._connect(path)
        if sock is not None:
            self.sockets[agent] = sock
        return sock

    def _connect(self, path: Path) -> zmq.Socket[bytes] | None:
        if self.ctx is None:
            self.ctx = zmq.Context(io_threads=1)
            self._finalizer = weakref.finalize(self, shut, self.ctx, self.sockets, 0)
        while self.kept is not None and len(self.sockets) >= self.kept:
            self._close_oldest()
        try:
            sock = self.ctx.socket(zmq.PUSH)
        except zmq.ZMQError:  # out of files or sockets: make room once, else do without
            if not self.sockets:
                return None
            self._close_oldest()
            try:
                sock = self.ctx.socket(zmq.PUSH)
            except zmq.ZMQError:
                return None
        sock.setsockopt(zmq.LINGER, self.linger_ms)
        sock.setsockopt(zmq.SNDHWM, _HWM)
        sock.setsockopt(zmq.RECONNECT_IVL, 20)
        sock.connect(f"ipc://{path}")
        return sock

    def _close_oldest(self) -> None:
        _, sock = self.sockets.popitem(last=False)
        sock.close()  # with its linger: a ring still in flight goes out

    def forget(self, agent: str) -> None:
        """Drop the socket to ``agent`` (it has left the team)."""
        sock = self.sockets.pop(agent, None)
        if sock is not None:
            sock.close(0)

    def close(self) -> None:
        """Close, letting frames still in flight go out (up to the linger). A Waker that is
        never closed drops what is still in flight when it is collected."""
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._own_ctx and self.ctx is not None:
            shut(self.ctx, self.sockets, None)
            self.ctx = None
        else:
            for sock in self.sockets.values():
                sock.close()
        self.sockets.clear()
