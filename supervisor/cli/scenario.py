"""Scenarios: a team, its teammates and a task DAG described in TOML, validated before
anything is written, then run to completion (by ``agentteams run`` and by the demo).

The whole task graph is created in one locked pass, so no teammate can see a task before
its blockers. Running stops at once when a task fails or the supervisor dies. A scenario
whose team exists is continued when it had not finished (its missing tasks and teammates
added), refused when it had (``--fresh`` starts it over), so an earlier run's results are
never reported as this one's. Its commands run in a directory of its own.
"""

from __future__ import annotations

import re
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from ipc.errors import Conflict, InvalidInput, NotRunning, TaskFailed, Timeout
from ipc.options import TeammateOptions
from ipc.paths import normalise_team_name
from ipc.schemas import LEAD_NAME, Task


class TeamSpec(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    description: str = ""
    wake: str = "zmq"
    cwd: str = ""  # where the commands run, relative to the scenario file (default: {root}/work/{team})


class TeammateSpec(TeammateOptions, forbid_unknown_fields=True, kw_only=True):
    prompt: str = "Work through the team's task list."
    count: int = 1

    def options(self, name: str, cwd: str) -> TeammateOptions:
        fields = {f: getattr(self, f) for f in TeammateOptions.__struct_fields__}
        return TeammateOptions(**{**fields, "name": name, "cwd": self.cwd or cwd})


class TaskSpec(msgspec.Struct, forbid_unknown_fields=True):
    key: str
    subject: str
    description: str = ""
    command: str = ""
    blocked_by: list[str] = []
    timeout_ms: int | None = None

    def metadata(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"key": self.key}
        if self.command:
            meta["command"] = self.command
        if self.timeout_ms:
            meta["timeout_ms"] = self.timeout_ms
        return meta


class Scenario(msgspec.Struct, forbid_unknown_fields=True):
    team: TeamSpec
    teammates: list[TeammateSpec]
    tasks: list[TaskSpec] = []
    timeout: float = 600.0


class RunReport(msgspec.Struct, kw_only=True):
    team: str
    teammates: list[str]
    tasks_total: int
    tasks_completed: int
    tasks_failed: list[str]
    seconds: float
    cwd: str = ""  # where the commands ran
    completed_before: int = 0  # of tasks_completed, by an earlier run that this one continued
    error: str = ""


def workdir(scenario: Scenario, origin: Path, root: Path, given: str | None) -> Path:
    """Where the scenario's commands run: ``given`` (--cwd), else the scenario's
    ``team.cwd`` (relative to its file), else a directory of its own under the root; made
    by the caller once the scenario is checked."""
    if given:
        path = Path(given).expanduser().absolute()
    elif scenario.team.cwd:
        path = (origin.parent / Path(scenario.team.cwd).expanduser()).absolute()
    else:
        path = root / "work" / normalise_team_name(scenario.team.name)
    if path.exists() and not path.is_dir():
        raise InvalidInput(f"the working directory {path} is a file; give a directory")
    return path


def check_agent_types(scenario: Scenario, cwd: Path, origin: str) -> None:
    """Each teammate's agent type as its supervisor will resolve it (from the directory it
    works in), checked before the team is made rather than at its spawn."""
    from ipc.agents import resolve  # its YAML and rules: only for a run

    for i, mate in enumerate(scenario.teammates):
        try:
            resolve(mate.agent_type, Path(mate.cwd) if mate.cwd else cwd)
        except InvalidInput as exc:
            raise InvalidInput(f"{origin}: teammates[{i}].agent_type: {exc.message}") from None


def check_rerun(team: Any, scenario: Scenario, origin: str) -> int:
    """How many of the scenario's tasks an earlier run completed; Conflict if it did them
    all (running nothing and reporting success would pass old results off as new)."""
    keyed = {t.meta.get("key"): t for t in team.tasks.list() if t.meta.get("key")}
    mine = [keyed[spec.key] for spec in scenario.tasks if spec.key in keyed]
    done = sum(1 for t in mine if t.status == "completed")
    if scenario.tasks and len(mine) == len(scenario.tasks) and done == len(mine):
        raise Conflict(
            f"{origin} already ran to completion in team {team.name!r} ({done}/{done} tasks completed); "
            f"'agentteams run {origin} --fresh' runs it again from the start"
        )
    return done


def load(path: Path) -> Scenario:
    """Parse and validate; every error is one line naming the file, line or key."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInput(f"{path}: no such scenario file") from None
    except IsADirectoryError:
        raise InvalidInput(f"{path} is a directory; give a scenario file (TOML)") from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 text (byte {exc.start}); a scenario is a TOML file") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read it ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{path}: invalid TOML: {exc}") from None
    return parse(data, str(path))


def parse(data: dict[str, Any], origin: str = "scenario") -> Scenario:
    try:
        scenario = msgspec.convert(data, Scenario)
    except msgspec.ValidationError as exc:
        # msgspec says e.g. "Expected `str`, got `int` - at `$.teammates[0].name`"
        raise InvalidInput(f"{origin}: {_in_toml_words(str(exc))}") from None
    validate(scenario, origin)
    return scenario


def _in_toml_words(error: str) -> str:
    """msgspec's words for a scenario's mistake, its JSON path as the TOML reads:
    "Object missing required field `key` - at `$.tasks[0]`" becomes
    "tasks[0] has no key; every [[tasks]] needs one"."""
    what, _, where = error.partition(" - at `$")
    where = where.rstrip("`").lstrip(".") or "the file"
    missing = re.fullmatch(r"Object missing required field `(\w+)`", what)
    if missing:
        table = re.sub(r"\[\d+\]$", "", where)
        every = f"; every [[{table}]] needs one" if table != where else ""
        return f"{where} has no {missing[1]}{every}"
    unknown = re.fullmatch(r"Object contains unknown field `(.+)`", what)
    if unknown:
        return f"{where} has an unknown key {unknown[1]!r}"
    return f"{where}: {what[0].lower()}{what[1:]}" if what else error


def validate(scenario: Scenario, origin: str) -> None:
    normalise_team_name(scenario.team.name)
    if scenario.team.wake not in ("zmq", "poll"):
        raise InvalidInput(f"{origin}: team.wake is {scenario.team.wake!r}; use zmq or poll")
    if not scenario.timeout > 0:
        raise InvalidInput(f"{origin}: timeout is {scenario.timeout:g}; give a positive number of seconds")
    if not scenario.teammates:
        raise InvalidInput(f"{origin}: no [[teammates]]; a scenario needs at least one")
    names: set[str] = set()
    for i, mate in enumerate(scenario.teammates):
        try:
            name = mate.checked().name
        except InvalidInput as exc:
            raise InvalidInput(f"{origin}: teammates[{i}]: {exc.message}") from None
        if not 1 <= mate.count <= 64:
            raise InvalidInput(f"{origin}: teammates[{i}].count is {mate.count}; use 1 to 64")
        for given in [name] if mate.count == 1 else [f"{name}-{n + 1}" for n in range(mate.count)]:
            if given == LEAD_NAME or given in names:  # refused now, not after the team is made
                taken = "the lead's name" if given == LEAD_NAME else "given twice"
                raise InvalidInput(
                    f"{origin}: teammates[{i}]: the name {given!r} is {taken}; give each its own"
                )
            names.add(given)
    keys: dict[str, TaskSpec] = {}
    for i, task in enumerate(scenario.tasks):
        if task.key in keys:
            raise InvalidInput(f"{origin}: tasks[{i}].key {task.key!r} is used twice")
        keys[task.key] = task
    for i, task in enumerate(scenario.tasks):
        for dep in task.blocked_by:
            if dep not in keys:
                raise InvalidInput(
                    f"{origin}: tasks[{i}] ({task.key}) is blocked by unknown key {dep!r}; known: {', '.join(keys)}"
                )
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
                return [*stack[stack.index(dep) :], dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for node in graph:
        if node not in state and (found := visit(node)):
            return found
    return []


def create_tasks(team: Any, scenario: Scenario) -> dict[str, str]:
    """Create the tasks the team does not have yet (by key), with their dependencies, in
    one locked pass; returns task key → task id for every task of the scenario."""
    existing = {t.meta.get("key"): t.id for t in team.tasks.list() if t.meta.get("key")}
    missing = [spec for spec in scenario.tasks if spec.key not in existing]
    position = {spec.key: i + 1 for i, spec in enumerate(missing)}
    batch = []
    for spec in missing:
        deps = [existing[d] if d in existing else f"@{position[d]}" for d in spec.blocked_by]
        batch.append((spec.subject, spec.description, None, spec.metadata(), deps))
    created = team.tasks.create_many(batch) if batch else []
    return {**existing, **{spec.key: task.id for spec, task in zip(missing, created, strict=True)}}


def spawn_all(team: Any, scenario: Scenario, cwd: str) -> list[str]:
    """Start the scenario's teammates that are not members yet; returns every name."""
    members = {m.name for m in team.config().teammates()}
    names = []
    for mate in scenario.teammates:
        for n in range(mate.count):
            name = mate.name if mate.count == 1 else f"{mate.name}-{n + 1}"
            if name in members:
                names.append(name)
                continue
            names.append(team.start_teammate(mate.options(name, cwd)).name)
    return names


def failure(task: Task) -> str:
    """One line: which task failed, and how."""
    error = str(task.meta.get("lastError", "")).strip()
    first = error.splitlines()[0] if error else "no detail"
    return f"task #{task.id} ({task.subject}) failed: {first}"


def wait_settled(
    team: Any,
    timeout: float,
    tick: Callable[[], None] | None = None,
    interval: float = 0.1,
    notice: Callable[[str], None] | None = None,
) -> list[Task]:
    """Wait until every task is completed. Raises TaskFailed at once when a task fails,
    NotRunning when the supervisor dies, and Timeout after ``timeout`` seconds. A request waiting
    for a person (a permission or a plan to approve) is told to ``notice`` once."""
    from ipc.answers import pending
    from ipc.schemas import LEAD_NAME

    deadline = time.monotonic() + timeout
    told: set[str] = set()
    while True:
        for _, request in pending(team.inbox(LEAD_NAME), team.store) if notice is not None else []:
            if request.request_id not in told and notice is not None:
                told.add(request.request_id)
                who = getattr(request, "agent_id", None) or getattr(request, "from_", "")
                notice(
                    f"{who} is waiting for an answer to {request.request_id}: "
                    f"'agentteams approve {team.name} {request.request_id}' or 'agentteams deny …'"
                )
        tasks: list[Task] = team.tasks.list(include_internal=False)
        failed = [t for t in tasks if t.failed]
        if failed:
            raise TaskFailed(
                failure(failed[0])
                + f"; retry it with 'agentteams task update {team.name} {failed[0].id} --status pending'"
            )
        if all(t.status == "completed" for t in tasks):
            return tasks
        if not team.is_up():
            raise NotRunning(
                f"the supervisor of {team.name!r} died; 'agentteams up {team.name}' continues the work"
            )
        if time.monotonic() > deadline:
            open_tasks = ", ".join(f"#{t.id}" for t in tasks if t.status != "completed")
            raise Timeout(f"tasks did not finish within {timeout:g}s (still open: {open_tasks})")
        if tick:
            tick()
        time.sleep(interval)


def report(
    team: Any, names: list[str], started: float, *, cwd: Path, before: int = 0, error: str = ""
) -> RunReport:
    tasks = team.tasks.list(include_internal=False)
    return RunReport(
        team=team.name,
        teammates=names,
        tasks_total=len(tasks),
        tasks_completed=sum(1 for t in tasks if t.status == "completed"),
        tasks_failed=[t.id for t in tasks if t.failed],
        seconds=round(time.monotonic() - started, 2),
        cwd=str(cwd),
        completed_before=before,
        error=error,
    )
