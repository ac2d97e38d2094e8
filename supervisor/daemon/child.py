"""What the children's state machine (:mod:`supervisor.daemon.children`) works through: one child's
record, the seam to processes, the port to the team's files, and the index of idle teammates."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import msgspec

from ipc.launch import LaunchSpec
from ipc.replies import SpawnReply, TeammateStatus
from ipc.schemas import TeammateTerminated
from supervisor.daemon.reactor import Timer
from supervisor.daemon.states import TeammateState, check_transition

S = TeammateState


class ProcessSeam(Protocol):
    """Every syscall of the lifecycle."""

    def start(self, spec: LaunchSpec) -> int:
        """Start a teammate process; its pid. Raises AgentTeamsError when it cannot."""
        ...

    def signal(self, pid: int, sig: int) -> None:
        """Signal one process (gone: nothing happens)."""
        ...

    def kill_tree(self, pid: int) -> None:
        """SIGKILL the process and everything in its session."""
        ...

    def startup_error(self, spec: LaunchSpec) -> str:
        """Why a teammate that exited during start-up did (its last log line), or ''."""
        ...


class TeamPort(Protocol):
    """What a teammate's lifecycle changes outside the supervisor (files, the lead)."""

    def started(self, spec: LaunchSpec, pid: int) -> None: ...
    def ended(self, name: str) -> None: ...
    def release(self, name: str, error: str = "", crash: str = "") -> list[str]: ...
    def left(self, name: str) -> None: ...
    def inactive(self, name: str) -> None: ...
    def activity(self, name: str, active: bool) -> None: ...
    def terminated(self, event: TeammateTerminated) -> None: ...
    def request_shutdown(self, name: str, reason: str) -> str: ...
    def tasks_ready(self, ids: list[str]) -> None: ...
    def subagent_exited(self, spec: LaunchSpec, code: int) -> None: ...


Done = Callable[[msgspec.Struct | None, str], None]  # (result, error): exactly one is set


@dataclass
class Child:
    spec: LaunchSpec
    state: TeammateState = S.EXITED
    pid: int | None = None
    restarts: deque[float] = field(default_factory=deque)
    task: str = ""
    shutdown_request_id: str = ""
    restart_timer: Timer | None = None
    last_exit: str = ""
    ready_waiters: list[Done] = field(default_factory=list)
    stop_waiters: list[Done] = field(default_factory=list)
    on_change: Callable[[Child], None] | None = None  # told of each change of state

    @property
    def name(self) -> str:
        return self.spec.agent_name

    @property
    def alive(self) -> bool:
        return self.pid is not None

    def to(self, new: TeammateState) -> None:
        check_transition(self.name, self.state, new)
        self.state = new
        if self.on_change is not None:
            self.on_change(self)

    def status(self) -> TeammateStatus:
        return TeammateStatus(
            name=self.name,
            pid=self.pid,
            state=str(self.state),
            task=self.task,
            restarts=len(self.restarts),
            incarnation=self.spec.incarnation_ms,
            color=self.spec.agent_color,
            last_exit=self.last_exit,
            backend=self.spec.backend,
            role=self.spec.role,
            parent=self.spec.parent,
        )

    def reply(self) -> SpawnReply:
        return SpawnReply(name=self.name, pid=self.pid, color=self.spec.agent_color, state=str(self.state))


class IdleTeammates:
    """The idle teammates a wake may go to, kept as their states change (the router asks at
    every report of every teammate), the most recently idle first: its process is the warmest."""

    def __init__(self) -> None:
        self._by_name: dict[str, Child] = {}  # the most recently idle last

    def on_change(self, child: Child) -> None:
        self._by_name.pop(child.name, None)
        # Claude Code teammates poll for themselves: a wake would only hold a task for them.
        if child.state == TeammateState.IDLE and child.spec.role == "teammate" and not child.spec.runs_claude:
            self._by_name[child.name] = child

    def forget(self, name: str) -> None:
        self._by_name.pop(name, None)

    def ordered(self) -> list[Child]:
        return list(reversed(self._by_name.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._by_name
