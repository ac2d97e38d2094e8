"""One asyncio event loop per process, on a daemon thread, for the asyncio NATS client;
our code is synchronous with threads, so every call crosses here (:meth:`Bridge.run`).

The loop belongs to the process that made it: after a fork the child starts its own (a
forked thread does not exist in the child), and the parent's connection objects are
never touched there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from ipc.errors import Timeout

T = TypeVar("T")


class Bridge:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="agentteams-engine", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (Timeout after ``timeout`` s)."""
        if threading.get_ident() == self._thread.ident:
            coro.close()
            raise RuntimeError("Bridge.run called from the engine loop itself; await instead")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise Timeout(f"the engine did not answer within {timeout:g}s") from None

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        """Start ``coro`` on the loop without waiting for it."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, fn: Any, *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)


_bridge: Bridge | None = None
_lock = threading.Lock()


def bridge() -> Bridge:
    """This process's bridge, started on first use."""
    global _bridge
    with _lock:
        if _bridge is None or _bridge.pid != os.getpid():
            _bridge = Bridge()
        return _bridge


def _forget_after_fork() -> None:
    global _bridge, _lock
    _bridge = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
