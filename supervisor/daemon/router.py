"""The supervisor's links to its agents and its doorbell.

The links (:mod:`ipc.link`, one socket for every agent) carry hello, state and ready tasks
up, and wakes and in-memory messages down. A ready task wakes one idle teammate that was not
woken for a task a moment ago, with the task to claim: not every teammate. A ready task that
finds no one idle waits for the next teammate to report idle: its last look for work may
have come just before the task existed, and its idle report just after the task was routed.

In a team of files the supervisor hands out claims (:attr:`Router.hand_out`): it claims the
ready tasks for idle teammates itself, many in one locked pass, and each wake names a task
that is already the teammate's. Hundreds of teammates then never queue on the task-list
lock to claim, nor read the list to find work; ready tasks wait in order in :attr:`ready`
until a teammate reports idle. The on-call teammate (:func:`ipc.wake.on_call`) is the
exception: a creator rings it directly, naming the task, and it claims that one itself (or,
if that one is gone, the lowest claimable).

The hand-out keeps at most :attr:`Router.caps` turns going at once: for teammates whose
model runs on this host's CPU (the offline model), it starts one while fewer than two per
core compute and fewer than eight per core are in a turn at all, counting those whose turn
waits on another process (a command, a subagent, an answer: :class:`ipc.link.Waiting`; a
wait that ends may take the computing turns past two per core for a while); many more for
those whose turns wait on a model's API.
A burst into a thousand idle offline teammates then runs a few processes at a time instead
of waking all of them at once (more at once would each run slower: caches, and more writers
at one lock), and the supervisor keeps the CPU it needs to answer. While ready tasks wait
for room the queue file says so, and a teammate's fallback poll leaves them to the hand-out
instead of claiming one itself.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple, Protocol

import zmq

from ipc import control, link
from ipc.errors import AgentTeamsError, StorageError
from ipc.schemas import LEAD_NAME
from ipc.storage import rewrite
from ipc.tasks import TaskList
from ipc.wake import LEAD_AGENT, ON_CALL, QUEUED, Waker
from supervisor.daemon.child import Child
from supervisor.daemon.reactor import Reactor

log = logging.getLogger("agentteams.supervisor")
CLAIM_WINDOW = 2.0  # a teammate woken for a task is not woken for another for this long
UNROUTED_KEPT = 1024  # ready tasks remembered for the next idle teammate (oldest forgotten)
UNROUTED_WINDOW = 2.0  # seconds such a task is remembered: the race it covers lasts ms
READY_KEPT = 100_000  # ready tasks queued for hand-out (oldest forgotten: the poll finds them)
HAND_OUT_ROUNDS = 4  # passes when handed tasks turn out taken already (claimed by others)
RETRY_SECONDS = 0.05  # before a hand-out that met a crowded task-list lock is tried again
CPU_TURNS_PER_CORE = 2  # turns computing at once for teammates whose model runs here (offline)
CPU_TURNS_IN_ALL_PER_CORE = 8  # and at once in all, with turns that wait on another process
API_TURNS_PER_CORE = 256  # for those whose turns mostly wait on a model's API
CPU_TURNS_ENV = "AGENTTEAMS_CPU_TURNS"  # overrides the first two: turns at once, in all


class TurnCap(NamedTuple):
    computing: int
    in_all: int  # turns that wait on another process included


def turn_caps() -> dict[bool, TurnCap]:
    """Turns handed out at once, by whether the teammate's model runs on this host's CPU."""
    cores = os.cpu_count() or 1
    cpu = os.environ.get(CPU_TURNS_ENV, "")
    api = API_TURNS_PER_CORE * cores
    return {
        True: TurnCap(int(cpu), int(cpu))
        if cpu.isdigit() and int(cpu) > 0
        else TurnCap(CPU_TURNS_PER_CORE * cores, CPU_TURNS_IN_ALL_PER_CORE * cores),
        False: TurnCap(api, api),
    }


HandOut = Callable[[list[tuple[str, str]]], list[tuple[str, str]]]


class Roster(Protocol):
    """What the links report to, and who may be woken for a task (the children)."""

    def idle(self) -> Iterable[Child]: ...
    def is_idle(self, name: str) -> bool: ...
    def on_hello(self, name: str) -> None: ...
    def on_state(self, name: str, state: str, task: str) -> None: ...


class Router:
    def __init__(
        self, reactor: Reactor, ctx: zmq.Context[zmq.Socket[bytes]], runtime_dir: Path, waker: Waker
    ) -> None:
        self.reactor = reactor
        self.runtime = runtime_dir
        self.waker = waker
        self.roster: Roster | None = None  # set once the children exist
        self.links = link.SupervisorLinks(ctx, runtime_dir)  # the agents opened, by name
        reactor.add_reader(self.links, self._on_links)
        self.claiming: dict[str, float] = {}  # teammate → when it was woken for a task
        self.unrouted: OrderedDict[str, float] = OrderedDict()  # ready task → when no one was idle
        self.task_wakes = 0  # wakes sent for ready tasks, ever (the benchmarks count them)
        # A team on the engine: tasks made claimable here are told to the other hosts too.
        self.relay: Callable[[list[str]], None] | None = None
        self.on_call = ""  # the idle teammate named in the on-call file (ipc.wake.on_call)
        self.hand_out: HandOut | None = None  # claims tasks for teammates (a team of files)
        self.ready: OrderedDict[str, None] = OrderedDict()  # ready tasks not yet handed out
        self.held: set[str] = set()  # idle teammates that take no task now (budget, back-off)
        self.retrying = False  # a hand-out that met a crowded lock is tried again soon
        self.caps = turn_caps()  # turns handed out at once, by cpu_bound
        self.cpu_bound: dict[str, bool] = {}  # teammate → its model runs on this host's CPU
        self.api_agents = 0  # of them, how many are not (kept, not counted at each hand-out)
        self.in_turn: set[str] = set()  # teammates whose turn computes now ("running")
        self.last_task: dict[str, str] = {}  # teammate → the task it last started
        self.waiting: set[str] = set()  # teammates whose turn waits on another process now
        self.queued = False  # what the queue file says: ready tasks wait for the hand-out
        # Puts a handed-out task back (pending, no owner) when its teammate cannot be told.
        self.on_give_back: Callable[[str, str], object] = lambda task_id, name: None

    def attach(self, roster: Roster, tasks: TaskList, *, hand_out: bool) -> None:
        """The children to route to, and whether claims of ``tasks`` are handed out here (a
        team of files woken by ZeroMQ; on the engine each teammate claims for itself, by
        compare-and-set, and with ``--wake poll`` each finds its work by reading the list)."""
        self.roster = roster
        if hand_out:
            self.hand_out = tasks.hand_out
            self.on_give_back = lambda task_id, name: tasks.release_owner(name)
            self.queued = True  # whatever a supervisor before us left there: nothing waits now
            self._mark_queued()

    def open(self, name: str, *, cpu_bound: bool = True) -> None:
        """A link for agent ``name`` (kept across its restarts); ``cpu_bound``: its model
        runs on this host's CPU (the offline model), not behind an API."""
        self.cpu_bound[name] = cpu_bound
        self.api_agents = list(self.cpu_bound.values()).count(False)
        self.links.open(name)

    def drop(self, name: str) -> None:
        """Agent ``name`` has left: its link and doorbell socket go."""
        self.links.drop(name)
        self.waker.forget(name)
        self.claiming.pop(name, None)
        self.held.discard(name)
        self.in_turn.discard(name)
        self.waiting.discard(name)
        self.cpu_bound.pop(name, None)
        self.last_task.pop(name, None)
        self.api_agents = list(self.cpu_bound.values()).count(False)
        if name == self.on_call:
            self._call_next()

    def ended(self, name: str) -> None:
        """Agent ``name``'s process ended (it may be restarted): the turn it was in, or was
        woken for, is over, and its room goes to a ready task. A crashed or failed
        teammate sends no state again to give it back."""
        self.claiming.pop(name, None)
        self.in_turn.discard(name)
        self.waiting.discard(name)
        self._fill_room(skip=name)  # not settled yet: it may still look idle

    def _fill_room(self, skip: str = "") -> list[str]:
        """Room opened under the caps: queued ready tasks go to idle teammates (not
        ``skip``); the teammates woken for them."""
        woken: list[str] = []
        if self.ready and self.hand_out is not None and self.roster is not None:
            now = time.monotonic()
            woken = self._hand_out((n for n in self._idle(now) if n != skip), now)
            self._mark_queued()
        return woken

    def push(self, name: str, text: str) -> bool:
        """An in-memory message down ``name``'s link; False if it is not connected."""
        return name in self.links and self.links.send(name, link.UserMessage(text=text))

    def wake(self, name: str) -> None:
        """Ring an agent's doorbell (the lead agent's, when it is the one)."""
        self.waker.wake(LEAD_AGENT if name == LEAD_NAME else name)

    def route_tasks(
        self, ids: list[str], *, relay: bool = True, rung: str = "", ahead: bool = False
    ) -> list[str]:
        """Wake one idle teammate, not already woken for a task, per ready task, with the
        task to claim (and, ``relay``, tell the other hosts of an engine team). ``rung``: the
        sender rang that teammate (the on-call one) for the first task itself; ``ahead``,
        while it created that task, so if the teammate has started it, it claimed it."""
        if relay and self.relay is not None:
            self.relay(ids)
        if self.roster is None:
            return []
        now = time.monotonic()
        woken: list[str] = []
        if rung and ids and ahead and self.last_task.get(rung) == ids[0]:
            ids = ids[1:]  # rung ahead of the task's file, it claimed (or did) it before this came
        elif rung and ids and self._may_wake(rung, now):
            # It claims now: this one (its ring named it) or the lowest.
            self.claiming[rung] = now
            woken.append(rung)
            self.task_wakes += 1
            ids = ids[1:]
        if self.hand_out is not None:
            for task_id in ids:
                self.ready[task_id] = None
            while len(self.ready) > READY_KEPT:
                self.ready.popitem(last=False)
            woken += self._hand_out(self._idle(now), now)
            self._mark_queued()
        else:
            idle = list(self._idle(now))
            for task_id in ids:
                name = idle.pop(0) if idle else None
                if name is not None and self._wake_for(name, task_id):
                    self.claiming[name] = now
                    woken.append(name)
                else:
                    self._remember(task_id, now)
        if woken or rung:
            self._call_next()
        return woken

    def _hand_out(self, idle: Iterable[str], now: float) -> list[str]:
        """Claim queued ready tasks for ``idle`` teammates in one pass, and wake each with
        its task; tasks someone else took meanwhile are dropped from the queue. Only as many
        of ``idle`` are read as there is room for."""
        assert self.hand_out is not None
        pending: Iterator[str] = (n for n in idle if n in self.links)
        woken: list[str] = []
        for _ in range(HAND_OUT_ROUNDS):
            takers = self._room(pending, now)
            if not takers or not self.ready:
                break
            pairs = list(zip(itertools.islice(self.ready, len(takers)), takers, strict=False))
            try:
                handed = self.hand_out(pairs)
            except AgentTeamsError as exc:  # the list's lock crowded past our timeout: again soon
                log.warning("handing out tasks: %s; trying again shortly", exc.message)
                if not self.retrying:
                    self.retrying = True
                    self.reactor.call_later(RETRY_SECONDS, self._retry)
                break
            for task_id, _name in pairs:
                del self.ready[task_id]
            given = {name for _, name in handed}
            pending = itertools.chain([n for n in takers if n not in given], pending)
            for task_id, name in handed:
                if self._wake_for(name, task_id):
                    self.claiming[name] = now
                    woken.append(name)
                else:  # cannot be told (its link is down): the task goes back for another
                    self._give_back(task_id, name)
        return woken

    def _room(self, idle: Iterable[str], now: float) -> list[str]:
        """The ``idle`` teammates that may start a turn now, within :attr:`caps`: those in a
        turn, or woken for a task a moment ago, take up room (those waiting, in all only).
        It reads ``idle`` no further than the last one it takes."""
        computing = {True: 0, False: 0}
        in_all = {True: 0, False: 0}
        for name in self.in_turn.union(n for n, t in self.claiming.items() if now - t < CLAIM_WINDOW):
            computing[self.cpu_bound.get(name, True)] += 1
        for name in self.waiting:
            in_all[self.cpu_bound.get(name, True)] += 1
        room = {
            kind: min(cap.computing - computing[kind], cap.in_all - computing[kind] - in_all[kind])
            for kind, cap in self.caps.items()
        }
        if not self.api_agents:
            room[False] = 0  # no teammate of that kind to make room for
        takers: list[str] = []
        if room[True] <= 0 and room[False] <= 0:
            return takers
        for name in idle:
            kind = self.cpu_bound.get(name, True)
            if room[kind] > 0:
                room[kind] -= 1
                takers.append(name)
                if room[True] <= 0 and room[False] <= 0:
                    break  # the rest need not be read
        return takers

    def _mark_queued(self) -> None:
        """The queue file: non-empty while ready tasks wait here for a teammate."""
        queued = bool(self.ready)
        if queued != self.queued:
            try:
                rewrite(self.runtime / QUEUED, b"1" if queued else b"", grow=False)
                self.queued = queued
            except StorageError as exc:  # teammates' polls then claim for themselves, as before
                log.warning("could not write the queue file: %s", exc.message)
        if self.ready and not self.in_turn and not self.retrying:
            # No turn will end to hand out the next: the room is held by wakes that may come
            # to nothing (a rung teammate that found no task). Look again once they lapse.
            self.retrying = True
            self.reactor.call_later(CLAIM_WINDOW, self._retry)

    def _retry(self) -> None:
        self.retrying = False
        if self.on_call in self._fill_room():
            self._call_next()

    def _give_back(self, task_id: str, name: str) -> None:
        log.warning("%s could not be told of task #%s; it goes back to the queue", name, task_id)
        try:
            self.on_give_back(task_id, name)
        except AgentTeamsError as exc:  # it stays that teammate's: its next look finds it
            log.warning("task #%s stays %s's: %s", task_id, name, exc.message)
            return
        self.ready[task_id] = None
        self.ready.move_to_end(task_id, last=False)

    def _idle(self, now: float) -> Iterator[str]:
        """Idle teammates not woken for a task a moment ago, in the order they are woken
        (read lazily: a hand-out takes only as many as there is room for)."""
        assert self.roster is not None
        return (c.name for c in self.roster.idle() if self._may_wake(c.name, now, idle=True))

    def _may_wake(self, name: str, now: float, *, idle: bool = False) -> bool:
        """``name`` is idle (``idle``: known to be), not woken for a task a moment ago, not held."""
        assert self.roster is not None
        return (
            (idle or self.roster.is_idle(name))
            and now - self.claiming.get(name, -CLAIM_WINDOW) >= CLAIM_WINDOW
            and name not in self.held
        )

    def _call_next(self) -> None:
        """Name the next on-call teammate (or nobody) in the on-call file."""
        now = time.monotonic()
        first = next(self._idle(now), "") if self.roster is not None else ""
        self._publish(first if first and self._room([first], now) else "")  # none past the cap

    def _publish(self, name: str) -> None:
        if name == self.on_call:
            return
        self.on_call = name
        try:
            rewrite(self.runtime / ON_CALL, name.encode(), grow=False)
        except StorageError:
            self.on_call = ""  # nobody rings a teammate directly: wakes go through here

    def _wake_for(self, name: str, task_id: str) -> bool:
        if name not in self.links or not self.links.send(name, link.Wake(task=task_id)):
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
        if self.hand_out is not None:
            if self.ready and self.roster is not None and self.roster.is_idle(name):
                # It first; then others, if a turn ended elsewhere without an idle report here.
                self._hand_out(itertools.chain([name], (n for n in self._idle(now) if n != name)), now)
                self._mark_queued()
            return
        while self.unrouted and now - next(iter(self.unrouted.values())) > UNROUTED_WINDOW:
            self.unrouted.popitem(last=False)
        if self.unrouted and self.roster is not None and self.roster.is_idle(name):
            self._wake_for(name, next(iter(self.unrouted)))

    def _on_links(self) -> None:
        frames = self.links.receive()
        if self.roster is None:
            return  # no agent yet: nothing of theirs to hear
        for name, frame in frames:
            if name not in self.links:
                continue  # dropped while its frames waited
            try:
                self._on_frame(name, frame)
            except Exception:  # one agent's frame must not cost the others' in the batch
                log.exception("error handling a frame from %s; continuing", name)

    def _on_frame(self, name: str, frame: link.Frame) -> None:
        assert self.roster is not None
        if isinstance(frame, link.Hello):
            self.roster.on_hello(name)
        elif isinstance(frame, link.State):
            self._on_state(name, frame)
        elif isinstance(frame, link.Waiting):
            self._on_waiting(name, frame.waiting)
        elif isinstance(frame, control.TasksReady):
            self.route_tasks(frame.ids)

    def _on_state(self, name: str, frame: link.State) -> None:
        assert self.roster is not None
        self.claiming.pop(name, None)
        self.waiting.discard(name)
        if frame.state == "running":
            self.in_turn.add(name)
            if frame.task:
                self.last_task[name] = frame.task
        else:
            self.in_turn.discard(name)
        self.roster.on_state(name, frame.state, frame.task)
        if frame.state == "held":
            self.held.add(name)
        else:
            self.held.discard(name)
        if frame.state == "idle":
            self._on_idle(name)
            if not self.on_call and name not in self.claiming and self._room([name], time.monotonic()):
                self._publish(name)
            elif name == self.on_call and name in self.claiming:
                self._call_next()  # it was handed a task: someone else is on call
        elif name == self.on_call or frame.state == "held":
            self._call_next()

    def _on_waiting(self, name: str, waiting: bool) -> None:
        """A turn waits on another process (or computes again): while it waits, its room
        under the cap goes to a ready task."""
        if waiting and name in self.in_turn:
            self.in_turn.discard(name)
            self.waiting.add(name)
            self._fill_room()
            if not self.on_call and self.roster is not None:
                self._call_next()  # room for a creator to ring one directly, too
        elif not waiting and name in self.waiting:
            self.waiting.discard(name)
            self.in_turn.add(name)
            if self.on_call:
                self._call_next()  # past the cap now, perhaps: no one on call then

    def close(self) -> None:
        self.reactor.remove_reader(self.links)
        self.links.close()
