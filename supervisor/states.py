"""A teammate's lifecycle as an explicit state machine with asserted transitions."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class TeammateState(StrEnum):
    STARTING = "starting"  # forked, not yet connected
    RUNNING = "running"  # handling a turn
    IDLE = "idle"  # waiting for input
    STOPPING = "stopping"  # shutdown approved or commanded; its exit is expected
    EXITED = "exited"  # gone (a restart may be scheduled)
    FAILED = "failed"  # crashed past the restart limit; stays so until asked


S = TeammateState
TRANSITIONS: dict[TeammateState, frozenset[TeammateState]] = {
    S.STARTING: frozenset({S.RUNNING, S.IDLE, S.STOPPING, S.EXITED, S.FAILED}),
    S.RUNNING: frozenset({S.IDLE, S.STOPPING, S.EXITED, S.FAILED}),
    S.IDLE: frozenset({S.RUNNING, S.STOPPING, S.EXITED, S.FAILED}),
    S.STOPPING: frozenset({S.EXITED}),
    S.EXITED: frozenset({S.STARTING, S.STOPPING, S.FAILED}),
    S.FAILED: frozenset({S.STARTING}),
}


class InvalidTransition(AssertionError):
    pass


@dataclass(frozen=True)
class SpawnSpec:
    """Everything needed to start (and restart) a teammate process."""

    name: str
    agent_id: str
    color: str
    model: str
    agent_type: str
    plan_mode_required: bool
    permission_mode: str
    cwd: str


@dataclass
class Teammate:
    spec: SpawnSpec
    state: TeammateState = S.EXITED
    pid: int | None = None
    incarnation_ms: int = 0
    started_at: float = 0.0  # monotonic
    restarts: deque[float] = field(default_factory=deque)  # monotonic times of restarts
    current_task: str = ""
    shutdown_request_id: str = ""
    restart_timer: Any = None
    last_exit: str = ""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def alive(self) -> bool:
        return self.pid is not None

    def to(self, new: TeammateState) -> None:
        if new == self.state:
            return
        if new not in TRANSITIONS[self.state]:
            raise InvalidTransition(f"{self.name}: {self.state} -> {new} is not a valid transition")
        self.state = new
