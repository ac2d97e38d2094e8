"""What a Claude Code agent definition (or a spawn) says beyond its tools and prompt, applied:
``effort`` sent to the Messages API, ``mcpServers`` started and offered as tools; and a
running teammate's permissions changed by the lead (``mode_set_request``,
``team_permission_update``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentproc import mcp_servers
from agentproc.channel import PollChannel
from agentproc.models.base import Turn
from agentproc.permissions import ModePolicy
from agentproc.runner import AgentRunner
from agentproc.tools import Tool
from agentproc.tools.team import LEAD_SEND_MESSAGE
from ipc import agents, trust
from ipc.errors import InvalidInput
from ipc.launch import LaunchSpec, SupervisorOptions
from ipc.options import SubagentOptions, TeammateOptions
from ipc.permission_rules import Rule
from ipc.schemas import (
    InboxMessage,
    Member,
    ModeSetRequest,
    TeamConfig,
    TeamPermissionUpdate,
    body_text,
    parse_body,
)
from supervisor import Team
from supervisor.cli.main import build_parser
from supervisor.daemon.specs import TeamContext, subagent_spec, teammate_spec
from tests.agent_helpers import LEAD_MODEL, define, launch_spec, serve
from tests.fake_anthropic import FakeAnthropic, Reply, text, tool_result_ids, tool_uses
from tests.runtime_helpers import cli, running_team, wait_for

pytestmark = pytest.mark.usefixtures("own_home")


def said(api: FakeAnthropic, marker: str) -> list[dict[str, Any]]:
    return [r for r in api.requests if marker in str(r["messages"][0]["content"])]


# ---------------------------------------------------------------- effort


def agent(
    cwd: Path,
    agent_type: str = "general-purpose",
    extra: tuple[Tool[Any], ...] = (),
    name: str = "a",
    **fields: Any,
) -> AgentRunner:
    given: dict[str, Any] = {"model": LEAD_MODEL, "agent_type": agent_type, "wake": "poll", **fields}
    return AgentRunner(launch_spec(cwd, "t", name, **given), PollChannel(), policy=ModePolicy(), extra=extra)


def test_effort_from_a_definition_or_a_spawn_reaches_the_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real SDK against the local Messages API: the definition's effort is the request's
    ``output_config.effort``, a spawn's wins, and it survives the trip through the member
    entry and the launch spec (a restart starts it so)."""
    define(tmp_path, "thinker", "effort: high")
    with serve(lambda request, n: text("Ready."), monkeypatch) as api:
        for runner in (agent(tmp_path, "thinker"), agent(tmp_path, "thinker", effort="low"), agent(tmp_path)):
            assert not runner.take_turn(Turn(kind="user", text="hello")).failure_reason
    assert [r.get("output_config") for r in api.requests] == [{"effort": "high"}, {"effort": "low"}, None]
    member = Member(agent_id="b@t", name="b", effort="low", cwd=str(tmp_path))
    context = TeamContext("t", tmp_path, "s", SupervisorOptions(), 1)
    spec = teammate_spec(context, member, permission_mode="")
    assert LaunchSpec.from_argv(spec.to_argv(), spec.to_env()).effort == "low"
    # A subagent asks for its definition's effort (sent from it), else its parent's.
    config = TeamConfig(
        name="t", members=[Member(agent_id="team-lead@t", name="team-lead", cwd=str(tmp_path))]
    )
    for agent_type, effort in (("general-purpose", "low"), ("thinker", "")):
        options = SubagentOptions(parent="b", prompt="p", agent_type=agent_type, model="offline")
        assert subagent_spec(context, config, options, spec).effort == effort
    assert build_parser().parse_args(["lead", "t", "--prompt", "go", "--effort", "max"]).effort == "max"


def test_a_bad_effort_level_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(
        InvalidInput, match="'extreme' is not an effort level; use one of low, medium, high, xhigh, max"
    ):
        TeammateOptions(name="dee", effort="extreme").checked()
    define(tmp_path, "odd", "effort: 7")
    with pytest.raises(
        InvalidInput,
        match=r"unknown agent type 'odd': its definition .*odd\.md cannot be read \('effort' 7 is not an effort level",
    ):
        agents.resolve("odd", tmp_path)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["spawn", "t", "fay", "--prompt", "x", "--effort", "huge"])
    assert "xhigh" in capsys.readouterr().err


# ---------------------------------------------------------------- permissions changed while running


def lead_said(team: Team) -> str:
    return "\n".join(m.text for m in team.inbox("team-lead").history())


def test_a_running_teammate_takes_a_mode_and_rules_from_the_lead_and_says_so(
    root: Path, tmp_path: Path
) -> None:
    """acceptEdits asks before writing outside its cwd; directories the lead adds (Python)
    let it write there unasked, a rule it adds from the command line lets a dangerous command
    run, and a mode it sets (dontAsk) denies what would ask. The teammate reports each."""
    outside = tmp_path / "outside"
    outside.mkdir()
    with running_team(root) as team:
        team.spawn("ada")
        wait_for(lambda: team.status().teammates[0].state == "idle", timeout=20)
        assert team.update_permissions("ada", directories=[str(outside)]) == ["ada"]
        sent = cli(root, "permit", "t", "*", "Bash(kill:*)", "--json")
        assert "kill:*" in sent.stdout
        write = team.tasks.create("Write outside", metadata={"command": f"echo 1 > {outside}/one"})
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(write.id).status == "completed", timeout=30)
        kill = team.tasks.create("Dangerous", metadata={"command": "kill -0 $$"})
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(kill.id).status == "completed", timeout=30)
        team.set_mode("ada", "dontAsk")
        asks = team.tasks.create("Read far outside", metadata={"command": f"ls {tmp_path.parent}"})
        team.wake("*")
        wait_for(lambda: "dontAsk" in str(team.tasks.get(asks.id).metadata), timeout=30)
        assert not [m for m in team.inbox("team-lead").history() if '"permission_request"' in m.text]
        said = wait_for(
            lambda: "My permission mode is now dontAsk (was acceptEdits)" in lead_said(team), timeout=10
        )
        assert said and "Applied for the rest of my session" in lead_said(team)
        with pytest.raises(InvalidInput, match="permission rule 'Bash\\(oops'"):
            team.update_permissions("ada", ["Bash(oops"])


def test_only_the_lead_changes_permissions_and_its_model_can(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lead agent's model (the real SDK against the local Messages API) sets a teammate's
    mode and adds a rule with SendMessage; a teammate's SendMessage cannot, and an entry in
    the lead's name from a teammate is refused by the reader."""
    team = Team.create("t", root=tmp_path, cwd=str(tmp_path))
    team.store.add_member("ada", cwd=str(tmp_path))
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("m", "SendMessage", {"to": "ada", "message": {"type": "mode_set_request", "mode": "plan"}}),
        ("p", "SendMessage", {"type": "team_permission_update", "recipient": "*", "rules": ["Bash(make:*)"]}),
    ]

    def script(request: dict[str, Any], n: int) -> Reply:
        return tool_uses(*calls) if not tool_result_ids(request) else text("Done.")

    with serve(script, monkeypatch) as api:
        lead = agent(tmp_path, name="team-lead", role="lead", extra=(LEAD_SEND_MESSAGE,))
        assert not lead.take_turn(Turn(kind="user", text="tighten ada")).failure_reason
    results = api.requests[-1]["messages"][-1]["content"]
    assert not any(r.get("is_error") for r in results), results
    bodies = [parse_body(m.text) for m in team.inbox("ada").history()]
    assert isinstance(bodies[0], ModeSetRequest) and bodies[0].mode == "plan"
    assert isinstance(bodies[1], TeamPermissionUpdate)
    assert bodies[1].permission_update == {
        "type": "addRules",
        "rules": [{"toolName": "Bash", "ruleContent": "make:*"}],
        "behavior": "allow",
        "destination": "session",
    }
    member = team.config().member("ada")
    assert member is not None and member.permission_mode == "plan"
    teammate = agent(tmp_path, name="ada")
    refused = teammate.tools.call(
        "SendMessage", {"type": "mode_set_request", "recipient": "ada", "mode": "bypassPermissions"}
    )
    assert refused.is_error and "'type' must be one of message" in refused.content
    assert len(team.inbox("ada").history()) == 2
    forged = InboxMessage(from_="bob", text=body_text(bodies[0]), timestamp="2026-01-01T00:00:00Z")
    why = trust.refusal(forged, bodies[0], trust.Check(trust.VERIFIED), "ada")
    assert why == "a ModeSetRequest may come only from team-lead, not bob"


# ---------------------------------------------------------------- mcpServers

SERVER = '''
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("calc")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two whole numbers."""
    return str(a + b)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def peek() -> str:
    """Look without changing anything."""
    return "nothing changed"


server.run()
'''


@pytest.mark.heavy  # an MCP server's start-up (a Python process importing mcp) takes seconds
def test_a_definitions_mcp_servers_are_started_and_their_tools_offered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A tiny stdio MCP server written here: its tool is offered as mcp__calc__add, a call
    runs behind the permission rules (a server-wide allow rule lets it run), and a server that
    cannot start is logged while the agent goes on (or stops it, when required)."""
    (tmp_path / "calc.py").write_text(SERVER)
    servers = f'mcpServers:\n  - calc: {{command: "{sys.executable}", args: ["{tmp_path / "calc.py"}"]}}\n'
    define(tmp_path, "counter", servers + '  - broken: {command: "/nonexistent/server"}')
    define(tmp_path, "quiet", 'mcpServers:\n  - mute: {command: sleep, args: ["61.5"]}')  # never answers
    define(
        tmp_path,
        "strict",
        'mcpServers:\n  - broken: {command: "/nonexistent/server"}\nrequiredMcpServers: [broken]',
    )

    def script(request: dict[str, Any], n: int) -> Reply:
        if tool_result_ids(request):
            return text("Done.")
        return tool_uses(("sum", "mcp__calc__add", {"a": 2, "b": 3}))

    with serve(script, monkeypatch) as api:
        runner = agent(tmp_path, "counter", allowed_tools="mcp__calc")
        try:
            assert not runner.take_turn(Turn(kind="user", text="add")).failure_reason
            assert runner.tools.tools["mcp__calc__peek"].kind == "read"  # may run in plan mode (and asks)
            assert runner.tools.tools["mcp__calc__add"].kind == "exec"
        finally:
            runner.mcp.close()
    offered = {t["name"]: t for t in api.requests[0]["tools"]}
    assert offered["mcp__calc__add"]["description"] == "Add two whole numbers."
    assert offered["mcp__calc__add"]["input_schema"]["required"] == ["a", "b"]
    result = api.requests[1]["messages"][-1]["content"][0]
    assert result["content"] == "5" and not result.get("is_error"), result
    assert "MCP server 'broken' failed to start" in caplog.text
    monkeypatch.setenv("MCP_TIMEOUT", "500")  # Claude Code's, in milliseconds
    assert agent(tmp_path, "quiet").mcp.failed == {
        "mute": "TimeoutError: it did not start and list its tools within 0.5s"
    }
    assert "61.5" not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    with pytest.raises(
        InvalidInput, match="strict requires the MCP server.s. broken, which did not start: broken: "
    ):
        agent(tmp_path, "strict")


def test_mcp_servers_named_by_a_definition_come_from_the_project_or_the_user(tmp_path: Path) -> None:
    (Path.home() / ".claude.json").write_text(
        json.dumps({"mcpServers": {"docs": {"command": "user-docs"}, "db": {"command": "user-db"}}})
    )
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "project-db"}}}))
    define(tmp_path, "named", "mcpServers: [docs, db, nowhere, {inline: {url: 'http://127.0.0.1:9/mcp'}}]")
    found = dict(mcp_servers._configs(agents.resolve("named", tmp_path), tmp_path))
    assert found == {
        "docs": {"command": "user-docs"},
        "db": {"command": "project-db"},  # the project's wins
        "nowhere": None,  # logged as not configured when the agent starts
        "inline": {"url": "http://127.0.0.1:9/mcp"},
    }
    with pytest.raises(InvalidInput, match="MCP server 'nowhere' is not configured"):
        mcp_servers._transport("nowhere", None, tmp_path)
    assert Rule.parse("mcp__db").names("mcp__db__query") and Rule.parse("mcp__db__*").names("mcp__db__query")
    assert not Rule.parse("mcp__db").names("mcp__dbx__query")
    assert mcp_servers.mcp_name("my.docs", "get page") == "mcp__my_docs__get_page"  # what the API takes


def test_an_offline_teammate_gives_a_tasks_work_to_a_subagent_when_its_metadata_says_so(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``metadata.subagent``: the offline teammate starts a subagent with that prompt, which
    (on the offline model too) runs the prompt's `backticked` commands, so subagents can be
    tried with no model API. Its answer is the task's result; a subagent that fails gives
    the task back, failed, with its error."""
    monkeypatch.setenv("AGENTTEAMS_SUBAGENT_CHECK_IN", "0.5")
    with running_team(root) as team:
        team.spawn("ada")
        wait_for(lambda: team.status().teammates[0].state == "idle", timeout=20)
        helped = team.tasks.create(
            "Count with a helper", metadata={"subagent": "Run `echo helped-$((40 + 2))`"}
        )
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(helped.id).status == "completed", timeout=30)
        assert wait_for(
            lambda: f"Completed task #{helped.id}: Count with a helper\nhelped-42" in lead_said(team)
        )
        records = [json.loads(p.read_bytes()) for p in (team.paths.team_dir / "subagents").glob("*.json")]
        assert [(r["parent"], r["status"], r["result"]) for r in records] == [
            ("ada", "completed", "helped-42")
        ]
        failing = team.tasks.create("Fail in a helper", metadata={"subagent": "Run `echo no >&2; exit 3`"})
        team.wake("*")
        wait_for(lambda: "lastError" in (team.tasks.get(failing.id).metadata or {}), timeout=30)
        error = str(team.tasks.get(failing.id).meta["lastError"])
        assert "the subagent failed" in error and "exit 3" in error, error
        # One the offline rule moves to the background at its first check-in ("background"
        # in its prompt): the task is done when the subagent is, and the lead is told so
        # with its answer, not sent a JSON brace.
        late = team.tasks.create(
            "Slow helper", metadata={"subagent": "In the background: `sleep 2; echo late`"}
        )
        team.wake("*")
        said = f"Completed task #{late.id}: Slow helper\nlate"
        assert wait_for(lambda: said in lead_said(team), timeout=30)
