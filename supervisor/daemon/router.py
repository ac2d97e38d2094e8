"""The supervisor's links to its agents and its doorbell.

One ``PAIR`` link per agent (:mod:`ipc.link`) carries hello, state and ready tasks up, and
wakes and in-memory messages down. A ready task wakes one idle teammate that was not woken
for a task a moment ago, with the task to claim: not every teammate. A ready task that finds
no one idle waits for the next teammate to report idle: its last look for work may have
come just before the task existed, and its idle report just after the task was routed.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import zmq

from ipc import control, link
from ipc.schemas import LEAD_NAME
from ipc.wake import LEAD_AGENT, Waker
from supervisor.daemon.child import Child
from supervisor.daemon.reactor import Reactor

CLAIM_WINDOW = 2.0  # a teammate woken for a task is not woken for another for this long
UNROUTED_KEPT = 1024  # ready tasks remembered for the next idle teammate (oldest forgotten)
UNROUTED_WINDOW = 2.0  # seconds such a task is remembered: the race it covers lasts ms


class Roster(Protocol):
    """What the links report to, and who may be woken for a task (the children)."""

    def idle(self) -> list[Child]: ...
    def on_hello(self, name: str) -> None: ...
    def on_state(self, name: str, state: str, task: str) -> None: ...


class Router:
    def __init__(
        self, reactor: Reactor, ctx: zmq.Context[zmq.Socket[bytes]], runtime_dir: Path, waker: Waker
    ) -> None:
        self.reactor = reactor
        self.ctx = ctx
        self.runtime = runtime_dir
        self.waker = waker
        self.roster: Roster | None = None  # set once the children exist
        self.links: dict[str, link.SupervisorLink] = {}
        self.claiming: dict[str, float] = {}  # teammate → when it was woken for a task
        self.unrouted: OrderedDict[str, float] = OrderedDict()  # ready task → when no one was idle
        self.task_wakes = 0  # wakes sent for ready tasks, ever (the benchmarks count them)
        # A team on the engine: tasks made claimable here are told to the other hosts too.
        self.relay: Callable[[list[str]], None] | None = None

    def open(self, name: str) -> None:
        """A link for agent ``name`` (kept across its restarts)."""
        if name not in self.links:
            end = link.SupervisorLink(self.ctx, self.runtime, name)
            self.links[name] = end
            self.reactor.add_reader(end, lambda: self._on_link(name))

    def drop(self, name: str) -> None:
        """Agent ``name`` has left: its link and doorbell socket go."""
        end = self.links.pop(name, None)
        if end is not None:
            self.reactor.remove_reader(end)
            end.close()
        self.waker.forget(name)
        self.claiming.pop(name, None)

    def push(self, name: str, text: str) -> bool:
        """An in-memory message down ``name``'s link; False if it is not connected."""
        end = self.links.get(name)
        return end is not None and end.send(link.UserMessage(text=text))

    def wake(self, name: str) -> None:
        """Ring an agent's doorbell (the lead agent's, when it is the one)."""
        self.waker.wake(LEAD_AGENT if name == LEAD_NAME else name)

    def route_tasks(self, ids: list[str], *, relay: bool = True) -> list[str]:
        """Wake one idle teammate, not already woken for a task, per ready task, with the
        task to claim (and, ``relay``, tell the other hosts of an engine team)."""
        if relay and self.relay is not None:
            self.relay(ids)
        if self.roster is None:
            return []
        now = time.monotonic()
        idle = [
            c.name
            for c in self.roster.idle()
            if now - self.claiming.get(c.name, -CLAIM_WINDOW) >= CLAIM_WINDOW
        ]
        woken: list[str] = []
        for task_id in ids:
            name = idle.pop(0) if idle else None
            if name is not None and self._wake_for(name, task_id):
                self.claiming[name] = now
                woken.append(name)
            else:
                self._remember(task_id, now)
        return woken

    def _wake_for(self, name: str, task_id: str) -> bool:
        end = self.links.get(name)
        if end is None or not end.send(link.Wake(task=task_id)):
            return False
        self.unrouted.pop(task_id, None)
        self.task_wakes += 1
        return True

    def _remember(self, task_id: str, now: float) -> None:
        self.unrouted[task_id] = now
        self.unrouted.move_to_end(task_id)
        while len(self.unrouted) > UNROUTED_KEPT:
            self.unrouted.popitem(last=False)

    def _on_idle(self, name: str) -> None:
        """A teammate reports idle: hand it the oldest recent task that found no one. It may
        have been claimed since (the teammate looks and stays idle), so the wake does not
        hold the teammate back from the next task as a routed wake does."""
        now = time.monotonic()
        while self.unrouted and now - next(iter(self.unrouted.values())) > UNROUTED_WINDOW:
            self.unrouted.popitem(last=False)
        if self.unrouted and self.roster is not None and name in {c.name for c in self.roster.idle()}:
            self._wake_for(name, next(iter(self.unrouted)))

    def _on_link(self, name: str) -> None:
        end = self.links.get(name)
        if end is None or self.roster is None:
            return
        for frame in end.receive():
            if isinstance(frame, link.Hello):
                self.roster.on_hello(name)
            elif isinstance(frame, link.State):
                self.claiming.pop(name, None)
                self.roster.on_state(name, frame.state, frame.task)
                if frame.state == "idle":
                    self._on_idle(name)
            elif isinstance(frame, control.TasksReady):
                self.route_tasks(frame.ids)

    def close(self) -> None:
        for end in self.links.values():
            end.close()
        self.links.clear()
