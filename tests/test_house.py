"""The shape of the house: which program a module belongs to, who may import whom, no import
circle, short modules; and the one write-then-ring path that wakes whom a write is for."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from ipc.tasks import TaskList
from tests.runtime_helpers import running_team, wait_for

TOP = Path(__file__).resolve().parents[1]
PACKAGES = ("ipc", "supervisor", "agentproc", "benchmarks")
SHIPPED = ("ipc", "supervisor", "agentproc")
MAX_LINES = 450


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (TOP / package).rglob("*.py"):
            parts = path.relative_to(TOP).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[str]:
    """The modules of ours that ``name`` imports (anywhere in it, type-checking blocks too).
    ``from package import module`` is an import of the module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            for alias in node.names:
                if f"{base}.{alias.name}" in MODULES:
                    yield f"{base}.{alias.name}"
                elif base in MODULES:
                    yield base


GRAPH = {name: set(_imports(name, path)) - {name} for name, path in MODULES.items()}


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_no_import_circles() -> None:
    """Tarjan's strongly connected components over every module of ours."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in GRAPH:
        if v not in index:
            visit(v)
    assert circles == []


def test_who_may_import_whom() -> None:
    rules = [
        ("ipc", ("supervisor", "agentproc", "benchmarks")),  # the contract depends on no program
        ("agentproc", ("supervisor", "benchmarks")),
        ("supervisor", ("agentproc", "benchmarks")),
        ("supervisor.daemon", ("supervisor.client", "supervisor.cli")),  # they meet over sockets
        ("supervisor.client", ("supervisor.daemon", "supervisor.cli", "supervisor.mcp")),
        ("supervisor.cli", ("supervisor.daemon",)),
        (
            "supervisor.mcp",
            ("supervisor.daemon", "supervisor.cli", "supervisor.web"),
        ),  # a door: the client side only
        ("supervisor.web", ("supervisor.daemon", "supervisor.cli")),  # a door (it mounts the MCP one)
        ("supervisor.resident", ("supervisor.daemon", "supervisor.cli", "supervisor.mcp", "supervisor.web")),
    ]
    broken = [
        f"{name} imports {dep}"
        for name, deps in GRAPH.items()
        for package, forbidden in rules
        if _under(name, package)
        for dep in deps
        if any(_under(dep, f) for f in forbidden)
    ]
    assert broken == []


def test_the_quick_path_imports_only_itself() -> None:
    """`send` and `task create` ask the resident door from a process of the standard library
    and these modules alone (tests/test_resident_door.py checks what such a process loads)."""
    quick = {"supervisor.cli", "supervisor.cli.quick", "supervisor.cli.parsers", "supervisor.cli.homes"}
    quick |= {"supervisor.cli.exits"}
    assert {name: GRAPH[name] - quick for name in quick if GRAPH[name] - quick} == {}


def test_modules_stay_short() -> None:
    long = {
        name: n
        for name, path in MODULES.items()
        if any(_under(name, p) for p in SHIPPED)
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def test_an_assignment_through_the_python_api_wakes_its_owner_at_once(tmp_path: Path) -> None:
    """The task is made where nothing rings (a bare TaskList), so only the assignment's own
    doorbell can reach the idle teammate before its fallback poll, two minutes away."""
    with running_team(tmp_path, fallback_poll=120.0) as team:
        team.spawn("alice", prompt="Work through the task list.")
        wait_for(lambda: (m := team.status().teammate("alice")) is not None and m.state == "idle", timeout=30)
        task = TaskList(tmp_path, team.name).create("quiet", metadata={"command": "true"})
        team.tasks.update(task.id, owner="alice")
        done = wait_for(lambda: team.tasks.get(task.id).status == "completed", timeout=20)
        assert done
