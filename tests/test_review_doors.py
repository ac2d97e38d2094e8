"""The newer operations (background_subagent, update_permissions, set_mode) at every door:
bad input is one line naming what was wrong, a non-zero exit or a tool error, and nothing
changes. In-process (the CLI's ``main``, the MCP door's ``Door``): quick."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_types import TextContent

from ipc import subagents
from ipc.replies import SubagentResult
from supervisor.cli.main import main
from supervisor.client.team import Team
from supervisor.mcp.tools import LEAD_TOOLS, MEMBER_TOOLS, Door
from tests.runtime_helpers import files
from tests.web_helpers import serving


def fails(root: Path, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``agentteams ARGS``: it must fail in one line, without a traceback; that line."""
    try:
        code = main([*args, "--root", str(root)])
    except SystemExit as exc:  # argparse's own refusals
        code = int(exc.code or 0)
    err = capsys.readouterr().err.strip()
    assert code != 0, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.fixture
def root(tmp_path: Path) -> Path:
    Team.create("t", root=tmp_path / "r", cwd=str(tmp_path))
    return tmp_path / "r"


def test_bad_background_permit_mode_and_effort_fail_in_one_line_changing_nothing(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = files(root)
    cases = {
        ("background", "ghost", "sub-1a2b3c4d"): "team 'ghost' does not exist",
        ("background", "t", "sub-1a2b3c4d"): "no subagent 'sub-1a2b3c4d' in team 't'",
        ("background", "t", "ada"): "is not a subagent id like 'sub-",
        ("background", "t", ""): "is not a subagent id",
        ("permit", "ghost", "ada", "Bash(ls)"): "team 'ghost' does not exist",
        ("permit", "t", "ada", "Bash(ls)"): "'ada' is not a member of team 't'",
        ("permit", "t", "*", "Bash(ls)"): "team 't' has no teammates to give permissions to",
        ("permit", "t", "*"): "give at least one permission rule",
        ("permit", "t", "*", "Bash(oops"): "permission rule 'Bash(oops'",
        ("permit", "t", "*", "Bash(ls)", "--behavior", "maybe"): "invalid choice: 'maybe'",
        ("permit", "t", "team-lead", "Bash(ls)"): "name a teammate or '*'",
        ("mode", "t", "ada", "plan"): "'ada' is not a member of team 't'",
        ("mode", "t", "ada", "wrong"): "invalid choice: 'wrong'",
        ("spawn", "t", "ada", "--prompt", "p", "--effort", "huge"): "invalid choice: 'huge'",
        ("lead", "t", "--prompt", "p", "--effort", "huge"): "invalid choice: 'huge'",
        ("lead", "t", "--prompt", "p", "--fork-subagents=yes"): "ignored explicit argument 'yes'",
    }
    for args, said in cases.items():
        assert said in fails(root, capsys, *args), args
    assert files(root) == before  # not even a lock file for the unknown subagent


def test_the_mcp_door_offers_every_lead_operation_and_refuses_bad_input_as_a_tool_error(root: Path) -> None:
    assert {"background_subagent", "update_permissions", "set_mode"} <= set(LEAD_TOOLS)
    assert not {"background_subagent", "update_permissions", "set_mode"} & set(MEMBER_TOOLS)
    team = Team.open("t", root=root)
    before = files(root)
    door = Door(team)
    calls = {
        ("background_subagent", "sub-1a2b3c4d"): "no subagent 'sub-1a2b3c4d' in team 't'",
        ("update_permissions", "ada"): "'ada' is not a member of team 't'",
        ("set_mode", "ada"): "'ada' is not a member of team 't'",
    }
    arguments = {
        "background_subagent": lambda who: {"subagent": who},
        "update_permissions": lambda who: {"name": who, "rules": ["Bash(ls)"]},
        "set_mode": lambda who: {"name": who, "mode": "plan"},
    }
    try:
        for (tool, who), said in calls.items():
            result = anyio.run(door.call, tool, arguments[tool](who))
            block = result.content[0]
            assert isinstance(block, TextContent) and result.is_error and said in block.text, (tool, result)
    finally:
        team.close()
    assert files(root) == before


def test_permit_says_what_it_sent_in_words_and_writes_it_to_the_teammates_inbox(
    root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    team = Team.open("t", root=root)
    try:
        team.store.add_member("ada", cwd=str(tmp_path))
        assert main(["permit", "t", "ada", "Bash(npm test:*)", "--add-dir", "/srv", "--root", str(root)]) == 0
        said = capsys.readouterr().out.strip()
        assert said == "sent to ada for their session: allow Bash(npm test:*); directories /srv"
        kinds = [m.text for m in team.inbox("ada").read()]
        assert len(kinds) == 2 and all('"team_permission_update"' in k for k in kinds)
    finally:
        team.close()


def test_background_of_a_subagent_whose_team_is_down_says_so_and_changes_nothing(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its record still says running (its supervisor went down under it): not moved, not
    reported as moved."""
    team = Team.open("t", root=root)
    paths = team.paths
    team.close()
    subagents.write(paths, SubagentResult(id="sub-1a2b3c4d", parent="ada"))
    before = files(root)
    assert "team 't' is not up, so subagent 'sub-1a2b3c4d' is not running" in fails(
        root, capsys, "background", "t", "sub-1a2b3c4d"
    )
    assert files(root) == before


def test_the_http_routes_of_the_newer_operations_refuse_bad_input_by_status(root: Path) -> None:
    before = files(root)
    base = "/api/v1/teams/t"
    cases: tuple[tuple[str, dict[str, Any], int, str], ...] = (
        ("/members/zed/mode", {"mode": "plan"}, 404, "'zed' is not a member of team 't'"),
        ("/members/zed/mode", {"mode": "wrong"}, 400, "permission mode 'wrong'; use one of"),
        ("/members/zed/permissions", {"rules": ["Bash(ls)"]}, 404, "'zed' is not a member of team 't'"),
        ("/members/*/permissions", {"rules": ["Bash(ls)"], "behavior": "maybe"}, 400, "behavior"),
        ("/subagents/sub-1a2b3c4d/background", {}, 404, "no subagent 'sub-1a2b3c4d' in team 't'"),
        ("/subagents/zed/background", {}, 400, "is not a subagent id"),
    )
    with serving(root) as server, server.client() as api:
        for path, body, status, said in cases:
            response = api.post(base + path, json=body)
            assert response.status_code == status and said in response.json()["error"], (path, response.text)
    assert files(root) == before
