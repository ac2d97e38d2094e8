"""Claude Code's permission updates as Structs (ipc.permission_updates): each kind read and
written as Claude Code writes it; a wrong one refused at the command line, MCP and HTTP in
the same one line, changing nothing; one that came from Claude Code's files passed on whole.
In-process: quick."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_types import TextContent

from ipc import permission_updates
from ipc.errors import InvalidInput
from ipc.permission_updates import EXAMPLES, KINDS
from ipc.schemas import PermissionGrant, PermissionRequest, PermissionResponse, parse_body
from supervisor.cli.main import main
from supervisor.client.team import Team
from supervisor.mcp.tools import Door
from tests.runtime_helpers import files
from tests.web_helpers import request


def test_each_kind_reads_and_writes_as_claude_code_writes_it() -> None:
    for kind in KINDS:
        raw = json.loads(EXAMPLES[kind])
        assert permission_updates.as_object(permission_updates.parse(raw)) == raw, kind
    bare = permission_updates.parse({"type": "addRules", "rules": [{"toolName": "Read"}], "behavior": "deny"})
    assert permission_updates.as_object(bare) == {
        "type": "addRules",
        "rules": [{"toolName": "Read"}],
        "behavior": "deny",
        "destination": "session",
    }


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("addRules", "permission update is not a JSON object; give one like {"),
        ({"type": "addRulez"}, "type 'addRulez' is not one; use one of addRules, replaceRules,"),
        ({"rules": []}, "type None is not one"),
        (
            {"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "maybe"},
            "(addRules): Invalid enum value 'maybe' - at `$.behavior`; e.g. {",
        ),
        ({"type": "addRules", "rules": [], "behavior": "allow"}, "(addRules) has no rules; e.g."),
        (
            {"type": "removeRules", "rules": [{"toolName": "Bash(", "x": 1}], "behavior": "allow"},
            "unknown field `x`",
        ),
        (
            {"type": "addRules", "rules": [{"toolName": "Bash("}], "behavior": "allow"},
            "is not a permission rule",
        ),
        ({"type": "setMode", "mode": "nope"}, "(setMode): mode 'nope' is not one; use one of default,"),
        ({"type": "setMode", "mode": "plan", "destination": "cloud"}, "Invalid enum value 'cloud'"),
        ({"type": "addDirectories", "directories": [""]}, "(addDirectories): a directory is empty; e.g."),
        (
            {"type": "removeDirectories", "directories": ["  "]},
            "(removeDirectories): a directory is empty; e.g.",
        ),
        (
            {"type": "addDirectories", "directories": ["rel"]},
            "(addDirectories): directory 'rel' is not an absolute path",
        ),
        ({"type": "setMode", "mode": "plan", "behaviour": "allow"}, "unknown field `behaviour`"),
    ],
)
def test_a_wrong_update_is_one_line_saying_what_would_be_right(raw: Any, said: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        permission_updates.parse(raw)
    assert said in caught.value.message and "\n" not in caught.value.message


@pytest.fixture
def root(tmp_path: Path) -> Path:
    with Team.create("t", root=tmp_path / "r", cwd=str(tmp_path)) as team:
        team.store.add_member("ada", cwd=str(tmp_path))
    return tmp_path / "r"


BAD = {"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "maybe"}


def test_a_bad_update_is_refused_alike_at_every_door_and_changes_nothing(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = files(root)

    def cli(*args: str) -> str:
        assert main([*args, "--update", json.dumps(BAD), "--root", str(root)]) == 1
        return capsys.readouterr().err.strip().removeprefix("agentteams: error: ")

    def mcp(tool: str, **args: Any) -> str:
        with Team.open("t", root=root) as team:
            result = anyio.run(Door(team).call, tool, args)
        block = result.content[0]
        assert result.is_error and isinstance(block, TextContent)
        return block.text

    def http(path: str, body: dict[str, Any]) -> str:
        answer = request(root, "POST", "/api/v1/teams/t" + path, json=body)
        assert answer.status_code == 400, answer.text
        return str(answer.json()["error"])

    permit = {
        cli("permit", "t", "ada"),
        mcp("update_permissions", name="ada", updates=[BAD]),
        http("/members/ada/permissions", {"updates": [BAD]}),
    }
    answer = {
        cli("approve", "t", "perm-1"),
        mcp("answer_request", request_id="perm-1", approve=True, permission_updates=[BAD]),
        http("/requests/perm-1", {"approve": True, "permission_updates": [BAD]}),
    }
    assert len(permit) == 1 and permit == answer, (permit, answer)
    assert permit.pop().startswith("permission update (addRules): Invalid enum value 'maybe'")
    assert files(root) == before


def _request(suggestions: list[dict[str, Any]]) -> PermissionRequest:
    return PermissionRequest(
        request_id="perm-1",
        agent_id="ada",
        tool_name="Bash",
        tool_use_id="toolu_1",
        description="list",
        input={"command": "ls"},
        permission_suggestions=suggestions,
    )


def test_claude_codes_suggestions_are_passed_on_whole_and_a_doors_updates_as_written(root: Path) -> None:
    """With ``always`` the request's own suggestions go back whole, with fields and kinds
    unknown here; updates given at a door go as their Structs write them."""
    odd: list[dict[str, Any]] = [
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "ls"}],
            "behavior": "allow",
            "destination": "localSettings",
            "addedBy": "2.1.330",
        },
        {"type": "addSandboxPaths", "paths": ["/tmp"]},
    ]
    with Team.open("t", root=root) as team:
        for request_id, kwargs in (
            ("perm-1", {"always": True}),
            ("perm-2", {"permission_updates": [{"type": "setMode", "mode": "plan"}]}),
        ):
            asked = _request(odd)
            asked.request_id = request_id
            team.messenger.send_body("ada", "team-lead", asked)
            team.approve(request_id, **kwargs)
        responses = [parse_body(m.text) for m in team.inbox("ada").read()]
    grants = [
        r.response.permission_updates
        for r in responses
        if isinstance(r, PermissionResponse) and isinstance(r.response, PermissionGrant)
    ]
    assert grants == [odd, [{"type": "setMode", "mode": "plan", "destination": "session"}]]
