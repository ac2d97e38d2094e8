"""Every operation of the table at every door: the command line, the Python ``Team``, the MCP
lead side and HTTP, or named with its reason in the one list of exceptions
(:mod:`supervisor.client.doors`). An operation added to the table without its doors fails
here. Then the operations that were missing at a door, called there. In-process: quick."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from mcp_types import TextContent

from ipc import operations as io
from ipc import worktrees
from supervisor.cli.main import main
from supervisor.client import operations
from supervisor.client.doors import DOORS, NOT_OFFERED
from supervisor.client.operations import TABLE
from supervisor.client.team import Team
from supervisor.mcp.tools import LEAD_TOOLS, MEMBER_TOOLS, Door
from supervisor.web.routes import ROUTES
from tests.runtime_helpers import git_repo
from tests.web_helpers import request

TOP = Path(__file__).resolve().parents[1]


def _called(paths: list[Path]) -> set[str]:
    """The operations these modules call: ``operations.NAME`` (or ``ops.NAME``), however the
    module of the table was imported."""
    found: set[str] = set()
    for path in paths:
        tree = ast.parse(path.read_text())
        aliases = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "supervisor.client"
            for alias in node.names
            if alias.name == "operations"
        }
        found |= {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        }
    return found


def offered() -> dict[str, set[str]]:
    """Each door's operations."""
    return {
        "cli": _called(sorted((TOP / "supervisor" / "cli").glob("*.py"))),
        "python": _called([TOP / "supervisor" / "client" / "team.py"]),
        "mcp": set(LEAD_TOOLS),
        "http": {route.op for route in ROUTES},
    }


def gaps() -> list[str]:
    """What is wrong: an operation missing at a door and not named in the exceptions, and an
    exception for an operation that the door offers after all (or that is no operation)."""
    doors = offered()
    wrong = [
        f"{name} is not offered at the {door} door: add it there, or say why not in supervisor/client/doors.py"
        for name in TABLE
        for door in DOORS
        if name not in doors[door] and door not in NOT_OFFERED.get(name, {})
    ]
    for name, reasons in NOT_OFFERED.items():
        for door, reason in reasons.items():
            if name not in TABLE or door not in DOORS or not reason.strip():
                wrong.append(f"the exception {name!r} at {door!r} names no operation and door, or no reason")
            elif name in doors[door]:
                wrong.append(f"{name} is offered at the {door} door: drop its exception")
    return wrong


def test_every_operation_is_at_every_door_or_its_absence_is_explained() -> None:
    assert gaps() == []


def test_an_operation_added_without_its_doors_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def new_thing(team: Any, args: io.NoInput, actor: str) -> io.NoInput:
        """A new operation."""
        return args

    monkeypatch.setitem(
        TABLE, "new_thing", operations.Operation("new_thing", io.NoInput, io.NoInput, new_thing, False, False)
    )
    assert [g.split(" ")[0] for g in gaps()] == ["new_thing"] * len(DOORS)
    monkeypatch.setitem(NOT_OFFERED, "team_status", {"http": "stale"})
    assert "team_status is offered at the http door: drop its exception" in gaps()


def test_a_member_session_offers_no_lead_only_operation() -> None:
    assert not [name for name in MEMBER_TOOLS if TABLE[name].lead_only]
    assert set(MEMBER_TOOLS) <= set(LEAD_TOOLS)


# ---------------------------------------------------------------- the operations that were missing


@pytest.fixture
def team(tmp_path: Path) -> Any:
    """A team (down) with a member ``ada`` whose worktree has a new file, one message each
    way, and a task."""
    repo = git_repo(tmp_path / "project", {"a.txt": "one\n"})
    team = Team.create("t", root=tmp_path / "r", cwd=str(repo))
    team.store.add_member("ada", cwd=str(repo))
    tree = worktrees.create(team.paths, "ada", str(repo))
    (Path(tree.path) / "b.txt").write_text("two\n")
    team.send("ada", "start on it", "go")
    team.send("team-lead", "on it", "ok", sender="ada")
    team.tasks.create("first task", "")
    yield team
    team.close()


def _tool(door: Door, tool: str, **args: Any) -> tuple[bool, str, Any]:
    result = anyio.run(door.call, tool, args)
    block = result.content[0]
    assert isinstance(block, TextContent)
    return bool(result.is_error), block.text, result.structured_content


def test_the_mcp_lead_side_runs_the_operations_it_lacked(team: Team) -> None:
    door = Door(team)
    failed, text, data = _tool(door, "diff", name="ada")
    assert not failed and data["changed"] == ["b.txt"] and "+two" in text
    failed, text, data = _tool(door, "team_messages")
    assert not failed and [m["to"] for m in data["messages"]] == ["ada", "team-lead"] and "on it" in text
    failed, text, data = _tool(door, "usage")
    assert not failed and data["agents"] == []
    failed, text, data = _tool(door, "ps")
    assert not failed and data["team"] == "t" and data["supervisor"] is None
    failed, text, _ = _tool(door, "read_log", name="ada")
    assert failed and "no log for 'ada' in team 't'" in text
    failed, text, _ = _tool(door, "read_transcript", name="ada")
    assert failed and text == "ada has no transcript yet in team 't': it has not taken a turn"
    for tool in ("restart_teammate", "push"):  # the team is down: refused, nothing changed
        failed, text, _ = _tool(door, tool, name="ada", **({"text": "hi"} if tool == "push" else {}))
        assert failed and "is not up" in text, (tool, text)
    failed, text, data = _tool(door, "task_delete", id="1")
    assert not failed and data == {"deleted": "1", "unblocked": []} and team.tasks.list() == []
    assert _tool(Door(team, "ada"), "diff", name="ada")[1].startswith("no tool 'diff'")


def test_http_shows_a_worktree_diff(team: Team, tmp_path: Path) -> None:
    found = request(tmp_path / "r", "GET", "/api/v1/teams/t/members/ada/diff")
    assert found.status_code == 200, found.text
    assert msgspec.convert(found.json(), worktrees.WorktreeDiff).changed == ["b.txt"]
    missing = request(tmp_path / "r", "GET", "/api/v1/teams/t/members/bob/diff")
    assert missing.status_code == 404 and missing.json()["error"].startswith("'bob' has no worktree")


def test_the_command_line_and_python_show_the_views_they_lacked(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = str(tmp_path / "r")

    def run(*args: str) -> str:
        assert main([*args, "--root", root]) == 0
        return capsys.readouterr().out

    assert [line.split("\t")[0] for line in run("members", "t").splitlines()] == ["team-lead", "ada"]
    assert run("summary", "t").startswith("t: down; 2 member(s); tasks: 1 pending,")
    assert run("requests", "t") == "no requests waiting\n"
    said = run("messages", "t").splitlines()
    assert said[0].startswith("* → ada: ") and said[0].endswith("team-lead [go]: start on it")
    assert said[1].endswith("ada [ok]: on it")
    assert run("wait", "t", "--timeout", "5").strip().endswith("ada [ok]: on it")  # now read
    assert run("wait", "t", "--timeout", "0") == "no messages within 0s\n"
    assert main(["transcript", "t", "ada", "--root", root]) == 1
    assert "ada has no transcript yet" in capsys.readouterr().err

    assert team.summary().tasks.pending == 1 and [m.name for m in team.members()] == ["team-lead", "ada"]
    assert [m.read for m in team.messages()] == [False, True]
    team.send("team-lead", "done", "fin", sender="ada")
    assert [e.text for e in team.wait_for_messages(timeout=5)] == ["done"]
    with pytest.raises(Exception, match="no log for 'ada'"):
        team.log("ada")
