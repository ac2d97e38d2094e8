"""Scenarios: a team, its teammates and a task DAG described in TOML, validated before
anything is written, then run to completion."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from ipc.errors import InvalidInput
from ipc.paths import normalise_agent_name, normalise_team_name
from ipc.schemas import PERMISSION_MODES


class TeamSpec(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    description: str = ""
    wake: str = "zmq"


class TeammateSpec(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    prompt: str = "Work through the team's task list."
    model: str = "offline"
    agent_type: str = "general-purpose"
    plan_mode_required: bool = False
    permission_mode: str = ""
    count: int = 1


class TaskSpec(msgspec.Struct, forbid_unknown_fields=True):
    key: str
    subject: str
    description: str = ""
    command: str = ""
    blocked_by: list[str] = []
    timeout_ms: int | None = None


class Scenario(msgspec.Struct, forbid_unknown_fields=True):
    team: TeamSpec
    teammates: list[TeammateSpec]
    tasks: list[TaskSpec] = []
    timeout: float = 600.0


def load(path: Path) -> Scenario:
    """Parse and validate; every error is one line naming the file, line or key."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InvalidInput(f"{path}: no such scenario file") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{path}: invalid TOML: {exc}") from None
    return parse(data, str(path))


def parse(data: dict[str, Any], origin: str = "scenario") -> Scenario:
    try:
        scenario = msgspec.convert(data, Scenario)
    except msgspec.ValidationError as exc:
        # msgspec says e.g. "Expected `str`, got `int` - at `$.teammates[0].name`"
        raise InvalidInput(f"{origin}: {exc}") from None
    validate(scenario, origin)
    return scenario


def validate(scenario: Scenario, origin: str) -> None:
    normalise_team_name(scenario.team.name)
    if scenario.team.wake not in ("zmq", "poll"):
        raise InvalidInput(f"{origin}: team.wake is {scenario.team.wake!r}; use zmq or poll")
    if not scenario.teammates:
        raise InvalidInput(f"{origin}: no [[teammates]]; a scenario needs at least one")
    for i, mate in enumerate(scenario.teammates):
        normalise_agent_name(mate.name)
        if mate.permission_mode and mate.permission_mode not in PERMISSION_MODES:
            raise InvalidInput(f"{origin}: teammates[{i}].permission_mode {mate.permission_mode!r}; use one of {', '.join(PERMISSION_MODES)}")
        if not 1 <= mate.count <= 64:
            raise InvalidInput(f"{origin}: teammates[{i}].count is {mate.count}; use 1 to 64")
    keys: dict[str, TaskSpec] = {}
    for i, task in enumerate(scenario.tasks):
        if task.key in keys:
            raise InvalidInput(f"{origin}: tasks[{i}].key {task.key!r} is used twice")
        keys[task.key] = task
    for i, task in enumerate(scenario.tasks):
        for dep in task.blocked_by:
            if dep not in keys:
                raise InvalidInput(f"{origin}: tasks[{i}] ({task.key}) is blocked by unknown key {dep!r}; known: {', '.join(keys)}")
    cycle = _find_cycle({t.key: t.blocked_by for t in scenario.tasks})
    if cycle:
        raise InvalidInput(f"{origin}: the tasks form a dependency cycle: {' -> '.join(cycle)}")


def _find_cycle(graph: dict[str, list[str]]) -> list[str]:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for dep in graph[node]:
            if state.get(dep) == 1:
                return [*stack[stack.index(dep):], dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for node in graph:
        if node not in state and (found := visit(node)):
            return found
    return []


@dataclass
class RunResult:
    team: str
    completed: int
    total: int
    failed: list[str]
    seconds: float


def create_tasks(team: Any, scenario: Scenario) -> dict[str, str]:
    """Create the DAG; returns task key → task id."""
    ids: dict[str, str] = {}
    for spec in scenario.tasks:
        metadata: dict[str, Any] = {"key": spec.key}
        if spec.command:
            metadata["command"] = spec.command
        if spec.timeout_ms:
            metadata["timeout_ms"] = spec.timeout_ms
        ids[spec.key] = team.tasks.create(spec.subject, spec.description, metadata=metadata).id
    for spec in scenario.tasks:
        if spec.blocked_by:
            team.tasks.update(ids[spec.key], add_blocked_by=[ids[d] for d in spec.blocked_by])
    return ids


def spawn_all(team: Any, scenario: Scenario, cwd: str) -> list[str]:
    names = []
    for mate in scenario.teammates:
        for n in range(mate.count):
            base = mate.name if mate.count == 1 else f"{mate.name}-{n + 1}"
            names.append(team.spawn(
                base, prompt=mate.prompt, model=mate.model, agent_type=mate.agent_type,
                plan_mode_required=mate.plan_mode_required, permission_mode=mate.permission_mode, cwd=cwd,
            ))
    return names


def all_settled(team: Any) -> bool:
    """Every task completed, or failed (left in progress with an error recorded)."""
    for task in team.tasks.list():
        failed = isinstance(task.metadata, dict) and "lastError" in task.metadata
        if task.status != "completed" and not failed:
            return False
    return True


def wait_settled(team: Any, timeout: float, tick: Callable[[], None] | None = None) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not all_settled(team):
        if time.monotonic() > deadline:
            raise TimeoutError(f"tasks did not finish within {timeout:g}s")
        if tick:
            tick()
        time.sleep(0.1)
