"""Waiting for one agent's inbox from threads: what a door (an MCP session) waits on.

A :class:`Bell` hears the agent's ZeroMQ doorbell (bound here when this process is that
agent, as a teammate binds its own) and its inbox file being written by a writer that
cannot ring (:mod:`ipc.fswatch`). One thread blocks in the kernel on both (a zmq poll) and
hands each ring to every waiting thread through a condition: no sleep, no poll loop, and
the ZeroMQ socket is only ever touched by that one thread.

A wait compares ring counts: read :meth:`Bell.rings`, look at the inbox, then
:meth:`Bell.wait` for a count past the one read, so a ring that lands between the look and
the wait is never missed.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from ipc.fswatch import FileWatch
from ipc.launch import DEFAULT_FALLBACK_POLL
from ipc.paths import TeamPaths, normalise_agent_name
from ipc.poller import Poller, close_context, context
from ipc.storage import ensure_dir
from ipc.wake import WakeListener


class Bell:
    def __init__(
        self, paths: TeamPaths, name: str, *, doorbell: bool, fallback_poll: float = DEFAULT_FALLBACK_POLL
    ) -> None:
        """``doorbell``: bind the agent's own doorbell (only the process that is that agent
        may: binding takes it over); without it, only the inbox file is watched. A waiter
        looks at the inbox again every ``fallback_poll`` seconds all the same, so a lost
        ring costs latency, never a message."""
        self.name = normalise_agent_name(name)
        self.fallback_poll = fallback_poll
        self._cond = threading.Condition()
        self._rings = 0
        self._closed = False
        self._cancels: dict[int, threading.Event] = {}
        # Requests that stay unread until answered, already handed to this bell's waiter.
        self.shown: set[str] = set()
        ensure_dir(paths.inboxes)
        self.watch = FileWatch(paths.inboxes, [paths.inbox(self.name).name])
        self._ctx = context() if doorbell else None
        self.listener: WakeListener | None = None
        try:
            if self._ctx is not None:
                self.listener = WakeListener(self._ctx, paths.runtime_dir(), self.name)
        except BaseException:
            self.watch.close()
            if self._ctx is not None:
                close_context(self._ctx)
            raise
        self._stop_r, self._stop_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name=f"bell-{self.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        poller = Poller()
        poller.register(self._stop_r)
        poller.register(self.watch.fd)
        if self.listener is not None:
            poller.register(self.listener)
        while True:
            ready = poller.poll(None)
            if self._stop_r in ready:
                return
            rung = False
            if self.listener is not None and self.listener in ready:
                self.listener.drain()
                rung = True
            if self.watch.fd in ready and self.watch.changed():
                rung = True
            if rung:
                with self._cond:
                    self._rings += 1
                    self._cond.notify_all()

    def rings(self) -> int:
        """How many times it has rung so far."""
        with self._cond:
            return self._rings

    def wait(self, seen: int, timeout: float) -> bool:
        """Block until it rings past ``seen`` (True), or ``timeout`` seconds pass, the bell
        closes or this thread's wait is cancelled (False)."""
        cancel = self._cancels.get(threading.get_ident())
        with self._cond:
            self._cond.wait_for(
                lambda: self._rings != seen or self._closed or (cancel is not None and cancel.is_set()),
                max(0.0, timeout),
            )
            return self._rings != seen

    def cancelled(self) -> bool:
        """Whether the current thread's wait has been cancelled (see :meth:`cancellable`)."""
        cancel = self._cancels.get(threading.get_ident())
        return cancel is not None and cancel.is_set()

    @contextlib.contextmanager
    def cancellable(self, cancel: threading.Event) -> Iterator[None]:
        """Waits in the current thread, inside this block, end when ``cancel`` is set
        through :meth:`cancel`."""
        me = threading.get_ident()
        self._cancels[me] = cancel
        try:
            yield
        finally:
            self._cancels.pop(me, None)

    def cancel(self, cancel: threading.Event) -> None:
        with self._cond:
            cancel.set()
            self._cond.notify_all()

    def close(self) -> None:
        """Stop listening (the doorbell's socket file goes); waiting threads return."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        os.write(self._stop_w, b"x")
        self._thread.join()
        os.close(self._stop_r)
        os.close(self._stop_w)
        self.watch.close()
        if self.listener is not None:
            self.listener.close()
        if self._ctx is not None:
            close_context(self._ctx)
