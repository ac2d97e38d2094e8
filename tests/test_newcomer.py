"""What a newcomer meets in the first hour: the README's first commands on a fresh machine."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_types import TextContent

from agentproc.permissions import _STATE_WORDS
from ipc import TeamConfigStore
from ipc.errors import InvalidInput
from supervisor.cli.demo import pipeline, plan_text
from supervisor.client.team import Team
from supervisor.mcp.http import listen
from supervisor.mcp.tools import Door
from tests.runtime_helpers import cli, nothing_left_under


def test_demo_plan_passes_the_teammates_guard_under_the_default_root() -> None:
    # `make demo` runs under ~/.agentteams: a command naming its work directory names
    # `.agentteams`, which a teammate's Bash guard refuses (the demo failed at task #1).
    plan = plan_text(pipeline(4, 20))
    assert _STATE_WORDS.search(plan) is None
    commands = [line.split(": `", 1)[1] for line in plan.splitlines()[1:]]
    assert len(commands) == 20
    assert not [c for c in commands if re.search(r"(^|\s)/\w", c)]  # relative to the team's cwd


def test_the_demo_piped_counts_up_to_every_task_and_leaves_nothing_running(tmp_path: Path) -> None:
    shown = cli(tmp_path, "demo").stdout
    counts = [int(n) for n in re.findall(r"^\[ *(\d+)/20\] tasks completed$", shown, re.MULTILINE)]
    # The lead deletes the team at the end: its list is then empty, which is not 0 done.
    assert counts == sorted(counts) and counts[-1] == 20, shown
    assert "Done: 20 of 20 tasks completed." in shown
    nothing_left_under(tmp_path)


def quickstart_python() -> str:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    quickstart = readme.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    return quickstart.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.heavy
def test_quickstart_python_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The README's snippet, its root moved under tmp_path: it must sum the data #1 wrote
    # (its teammate works in the current directory, as a person's would).
    monkeypatch.chdir(tmp_path)
    code = quickstart_python()
    assert 'root="/tmp/at"' in code
    code = code.replace('root="/tmp/at"', f"root={str(tmp_path)!r}")
    scope: dict[str, Any] = {}
    try:
        exec(compile(code, "README.md (Quickstart)", "exec"), scope)
    finally:
        if "team" in scope:
            scope["team"].down()
    team = scope["team"]
    assert [t.status for t in team.tasks.list()] == ["completed", "completed"]
    assert "Completed task #2: Sum it\n5050" in [m.text for m in team.inbox("team-lead").read()]
    assert not team.is_up()
    # Its offline teammate printed nothing: the empty log says so rather than a blank screen.
    logs = cli(tmp_path, "logs", "myteam", "worker-1")
    assert logs.stdout == "" and "worker-1's log is empty" in logs.stderr
    assert "'agentteams transcript myteam worker-1'" in logs.stderr
    assert json.loads(cli(tmp_path, "logs", "myteam", "worker-1", "--json").stdout)["text"] == ""


def test_up_does_not_claim_to_resume_an_mcp_member(root: Path) -> None:
    # An MCP session (`mcp --as bob`) left the team's config with bob in it, inactive:
    # `up` cannot start its client, so it must not say it resumed bob.
    cli(root, "team", "create", "t")
    TeamConfigStore(root, "t").add_member("bob", backend_type="mcp")
    try:
        up = json.loads(cli(root, "up", "t", "--json").stdout)
        assert up["resumed"] == []
    finally:
        cli(root, "down", "t", ok=None)


def test_a_mistyped_team_names_the_teams_there_and_changes_nothing(root: Path) -> None:
    cli(root, "team", "create", "myteam")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    for args in (
        ("send", "mytaem", "alice", "hi", "--summary", "x"),
        ("task", "list", "mytaem"),
        ("ps", "mytaem"),
    ):
        err = cli(root, *args, ok=False).stderr.strip()
        assert "team 'mytaem' does not exist" in err and "(its teams: myteam)" in err
        assert "create it with 'agentteams team create mytaem'" in err
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before  # no phantom team or inbox


def test_a_member_asking_for_a_lead_side_tool_is_told_where_it_is(root: Path) -> None:
    team = Team.create("t", root=root)
    TeamConfigStore(root, "t").add_member("bob", backend_type="mcp")
    texts = {}
    for door, tool in (
        (Door(team, "bob"), "spawn_teammate"),
        (Door(team, "bob"), "fly"),
        (Door(team), "fly"),
    ):
        result = anyio.run(door.call, tool, {"name": "zed"})
        block = result.content[0]
        assert result.is_error and isinstance(block, TextContent)
        texts[(door.actor, tool)] = block.text
    assert texts[("bob", "spawn_teammate")].startswith(
        "no tool 'spawn_teammate' for a member (the lead side has it: 'agentteams mcp TEAM' without --as); tools: "
    )
    assert texts[("bob", "fly")].startswith("no tool 'fly'; tools: team_status")  # no such tool anywhere
    assert texts[("team-lead", "fly")].startswith("no tool 'fly'; tools: ")
    assert [m.name for m in team.config().teammates()] == ["bob"]  # nothing spawned


def test_chat_from_a_pipe_names_the_option_that_allows_it(root: Path) -> None:
    cli(root, "team", "create", "t")
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    err = cli(root, "chat", "t", stdin="hello\n", ok=False).stderr
    assert "to read a pipe add --allow-pipe" in err
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_a_port_in_use_says_how_to_get_another() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(InvalidInput) as refused:
            listen(f"127.0.0.1:{port}")
    assert refused.value.message == (
        f"cannot listen on 127.0.0.1:{port}: Address already in use; "
        "another server has that port: pick another (port 0 lets the system choose)"
    )


def test_version_is_printed_and_exits_zero(root: Path) -> None:
    from importlib.metadata import version

    out = cli(root, "--version")
    assert out.stdout == f"agentteams {version('agentteams')}\n"


def test_mcp_as_a_name_it_must_change_says_the_name_it_joins_as(root: Path) -> None:
    cli(root, "team", "create", "t")
    joined = cli(root, "mcp", "t", "--as", "bad name!", stdin="")  # stdin at its end: the session ends
    assert "joining as 'bad-name-'" in joined.stderr
    assert [m.name for m in TeamConfigStore(root, "t").read().teammates()] == ["bad-name-"]
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    refused = cli(root, "mcp", "t", "--as", "!!", stdin="", ok=False).stderr
    assert "agent name '!!' has no letter or digit" in refused
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
