"""Waiting on several sources at once (our sockets and plain file descriptors), so that
code outside ``ipc`` never touches ZeroMQ."""

from __future__ import annotations

import errno
from typing import Any, Protocol

import zmq


class HasSocket(Protocol):
    socket: zmq.Socket[bytes]


Source = HasSocket | int


class Poller:
    def __init__(self) -> None:
        self._poller = zmq.Poller()
        self._keys: dict[Any, Source] = {}

    @staticmethod
    def _handle(source: Source) -> Any:
        return source if isinstance(source, int) else source.socket

    def register(self, source: Source) -> None:
        handle = self._handle(source)
        self._poller.register(handle, zmq.POLLIN)
        self._keys[handle] = source

    def unregister(self, source: Source) -> None:
        handle = self._handle(source)
        if handle in self._keys:
            self._poller.unregister(handle)
            del self._keys[handle]

    def poll(self, timeout: float | None) -> list[Source]:
        """Sources with something to read, after waiting up to ``timeout`` seconds (None:
        for ever). A signal that interrupts the wait returns an empty list."""
        ms = None if timeout is None else max(0, int(timeout * 1000 + 0.999))
        try:
            events = self._poller.poll(ms)
        except zmq.ZMQError as exc:
            if exc.errno == errno.EINTR:
                return []
            raise
        return [self._keys[handle] for handle, _ in events if handle in self._keys]


def context(max_sockets: int | None = None) -> zmq.Context[zmq.Socket[bytes]]:
    """A ZeroMQ context for one process (one I/O thread is plenty for doorbells), for up to
    ``max_sockets`` sockets (None: ZeroMQ's 1,023). The size only takes before the first
    socket, so it is set here."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context(io_threads=1)
    if max_sockets is not None:
        ctx.set(zmq.MAX_SOCKETS, max_sockets)
    return ctx


def close_context(ctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    ctx.term()


def shut(ctx: zmq.Context[zmq.Socket[bytes]], sockets: Any, linger_ms: int | None) -> None:
    """Close ``sockets`` (with ``linger_ms``, None: their own), then terminate ``ctx``.

    Objects that own a context register this with :func:`weakref.finalize` (linger 0): a
    context left to the garbage collector could otherwise be terminated while its sockets,
    collected in the same cycle, are not closed yet, and wait for them for ever.
    """
    for sock in list(sockets.values() if isinstance(sockets, dict) else sockets):
        if not sock.closed:
            sock.close(linger_ms)
    if not ctx.closed:
        ctx.term()
