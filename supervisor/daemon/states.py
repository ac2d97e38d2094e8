"""A teammate's lifecycle as an explicit state machine with asserted transitions."""

from __future__ import annotations

from enum import StrEnum


class TeammateState(StrEnum):
    STARTING = "starting"  # forked, not yet connected
    RUNNING = "running"  # handling a turn
    IDLE = "idle"  # waiting for input
    STOPPING = "stopping"  # shutdown approved or commanded; its exit is expected
    EXITED = "exited"  # gone (a restart may be scheduled)
    FAILED = "failed"  # crashed past the restart limit, or kept failing; stays so until asked


S = TeammateState
TRANSITIONS: dict[TeammateState, frozenset[TeammateState]] = {
    S.STARTING: frozenset({S.RUNNING, S.IDLE, S.STOPPING, S.EXITED, S.FAILED}),
    S.RUNNING: frozenset({S.IDLE, S.STOPPING, S.EXITED, S.FAILED}),
    S.IDLE: frozenset({S.RUNNING, S.STOPPING, S.EXITED, S.FAILED}),
    S.STOPPING: frozenset({S.EXITED}),
    S.EXITED: frozenset({S.STARTING, S.STOPPING, S.FAILED}),
    S.FAILED: frozenset({S.STARTING, S.STOPPING, S.EXITED}),
}
ALIVE = frozenset({S.STARTING, S.RUNNING, S.IDLE, S.STOPPING})


class InvalidTransition(AssertionError):
    pass


def check_transition(name: str, old: TeammateState, new: TeammateState) -> None:
    if new != old and new not in TRANSITIONS[old]:
        raise InvalidTransition(f"{name}: {old} -> {new} is not a valid transition")
