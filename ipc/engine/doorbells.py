"""The doorbells of one engine team in this process: who listens for which agent, and rings
held back until this process's copy of the team holds what the ringer had written.

A ring is a core message and can overtake the watcher's delivery of the write it announces
(a task created on another host); a rung agent that looked at once could find nothing and
sleep until its fallback poll. So a ring carries the ringer's revision, and is passed on once
the watcher has delivered that far, or after :data:`RING_PATIENCE` seconds in any case.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

RING_PATIENCE = 1.0  # seconds a ring waits for the copy to hold what the ringer wrote


class Doorbells:
    def __init__(self) -> None:
        self.listeners: dict[str, list[Callable[[], None]]] = {}
        self.delivered = 0  # highest revision the watcher delivered (not this process's writes)
        self._held: list[tuple[int, str]] = []
        self._lock = threading.Lock()

    def add(self, agent: str, poke: Callable[[], None]) -> bool:
        """Listen for ``agent``; True for its first listener (subscribe then)."""
        first = agent not in self.listeners
        self.listeners.setdefault(agent, []).append(poke)
        return first

    def poke(self, agent: str) -> None:
        for poke in self.listeners.get(agent, ()):
            poke()

    def rung(self, agent: str, data: bytes, watching: bool) -> bool:
        """A ring for ``agent`` carrying the ringer's revision: True if it is held back (the
        caller then calls :meth:`overdue` after :data:`RING_PATIENCE`)."""
        try:
            at = int(data or b"0")
        except ValueError:
            at = 0
        with self._lock:
            if watching and self.delivered < at:
                self._held.append((at, agent))
                return True
        self.poke(agent)
        return False

    def caught_up(self, revision: int) -> None:
        """The watcher delivered ``revision``: pass on the rings that waited for it."""
        with self._lock:
            self.delivered = max(self.delivered, revision)
            due = [agent for at, agent in self._held if at <= self.delivered]
            if due:
                self._held = [(at, agent) for at, agent in self._held if at > self.delivered]
        for agent in due:
            self.poke(agent)

    def overdue(self, agent: str) -> None:
        """A held ring whose revision never arrived: pass it on anyway."""
        with self._lock:
            held = [(at, name) for at, name in self._held if name == agent]
            if not held:
                return
            self._held.remove(held[0])
        self.poke(agent)
