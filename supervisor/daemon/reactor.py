"""The supervisor's event loop: readers, timers and signals on one thread.

As trio keeps its run loop private and its clock injectable, the rest of the supervisor
sees only :class:`Scheduler` (``now`` and ``call_later``), so its timing logic (restart
backoff, grace periods) runs under a fake clock in unit tests.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ipc.poller import Poller, Source

log = logging.getLogger("agentteams.supervisor")


class Clock(Protocol):
    def now(self) -> float: ...


class SystemClock:
    def now(self) -> float:
        return time.monotonic()


@dataclass(order=True)
class Timer:
    when: float
    seq: int
    action: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class Scheduler(Protocol):
    """What timing logic needs from a loop: the time, and a way to act later."""

    def now(self) -> float: ...
    def call_later(self, delay: float, action: Callable[[], None]) -> Timer: ...


class TimerQueue:
    """Timers on a clock; :meth:`run_due` fires those whose time has come."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._heap: list[Timer] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self.clock.now()

    def call_later(self, delay: float, action: Callable[[], None]) -> Timer:
        timer = Timer(self.clock.now() + delay, next(self._seq), action)
        heapq.heappush(self._heap, timer)
        return timer

    def run_due(self) -> None:
        now = self.clock.now()
        while self._heap and self._heap[0].when <= now:
            timer = heapq.heappop(self._heap)
            if not timer.cancelled:
                timer.action()

    def next_delay(self) -> float | None:
        while self._heap and self._heap[0].cancelled:
            heapq.heappop(self._heap)
        return None if not self._heap else max(0.0, self._heap[0].when - self.clock.now())


class Reactor(TimerQueue):
    """Readers (sockets, fds), timers, and signals delivered through a wake-up fd."""

    def __init__(self, clock: Clock | None = None) -> None:
        super().__init__(clock or SystemClock())
        self.poller = Poller()
        self.readers: dict[int, tuple[Source, Callable[[], None]]] = {}
        self.stopped = False
        self._signals: dict[int, Callable[[], None]] = {}
        self._sig_r: socket.socket | None = None
        self._sig_w: socket.socket | None = None

    def add_reader(self, source: Source, on_ready: Callable[[], None]) -> None:
        self.poller.register(source)
        self.readers[id(source) if not isinstance(source, int) else source] = (source, on_ready)

    def remove_reader(self, source: Source) -> None:
        self.poller.unregister(source)
        self.readers.pop(id(source) if not isinstance(source, int) else source, None)

    def on_signal(
        self, signum: int, handler: Callable[[], None], at_once: Callable[[], None] = lambda: None
    ) -> None:
        """Run ``handler`` in the loop (not in the signal handler) when ``signum`` arrives, and
        ``at_once`` in the handler itself (a flag set: what a loop stuck in a call can see)."""
        if self._sig_r is None:
            self._sig_r, self._sig_w = socket.socketpair()
            self._sig_r.setblocking(False)
            self._sig_w.setblocking(False)
            signal.set_wakeup_fd(self._sig_w.fileno())
            self.add_reader(self._sig_r.fileno(), self._drain_signals)
        self._signals[signum] = handler
        signal.signal(signum, lambda *_: at_once())  # the wake-up fd carries the signal number

    def _drain_signals(self) -> None:
        assert self._sig_r is not None
        with contextlib.suppress(BlockingIOError):
            for signum in self._sig_r.recv(4096):
                handler = self._signals.get(signum)
                if handler is not None:
                    handler()

    def run_once(self, max_wait: float | None = None) -> None:
        wait = self.next_delay()
        if max_wait is not None:
            wait = max_wait if wait is None else min(wait, max_wait)
        for source in self.poller.poll(wait):
            key = id(source) if not isinstance(source, int) else source
            entry = self.readers.get(key)
            if entry is not None:
                self._guarded(entry[1])
        self._run_due_guarded()

    def _run_due_guarded(self) -> None:
        now = self.clock.now()
        while self._heap and self._heap[0].when <= now:
            timer = heapq.heappop(self._heap)
            if not timer.cancelled:
                self._guarded(timer.action)

    @staticmethod
    def _guarded(action: Callable[[], None]) -> None:
        try:
            action()
        except Exception:  # the supervisor must outlive any one bad event: log, go on
            log.exception("error in the supervisor loop; continuing")

    def run(self) -> None:
        while not self.stopped:
            self.run_once()

    def stop(self) -> None:
        self.stopped = True

    def close(self) -> None:
        if self._sig_r is not None:
            signal.set_wakeup_fd(-1)
            self._sig_r.close()
            assert self._sig_w is not None
            self._sig_w.close()
