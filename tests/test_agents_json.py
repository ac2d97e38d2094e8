"""Agent definitions given as JSON, as Claude Code's ``--agents`` takes them: the same fields
as the Markdown frontmatter (``prompt`` for the body), winning over ``.claude/agents``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from agentproc.channel import PollChannel
from agentproc.permissions import ModePolicy
from agentproc.runner import AgentRunner
from ipc import agents, claude_code
from ipc.errors import InvalidInput
from ipc.launch import LaunchSpec, SupervisorOptions, agents_json
from ipc.options import SubagentOptions
from ipc.schemas import Member, TeamConfig
from supervisor import Team
from supervisor.daemon.specs import TeamContext, subagent_spec
from tests.agent_helpers import LEAD_MODEL, launch_spec, serve, write_definition
from tests.fake_anthropic import Reply, last_user_text, text, text_of, tool_result_ids, tool_uses
from tests.runtime_helpers import cli, nothing_left_under

pytestmark = pytest.mark.usefixtures("own_home", "fake_api_env")
REVIEWER = {
    "description": "Reviews code",
    "prompt": "You review code and never change it.",
    "tools": ["Read", "Grep"],
    "model": "sonnet",
    "maxTurns": 7,
}


def define(folder: Path, name: str, front: str) -> None:
    write_definition(folder, name, f"description: from {folder}\n{front}", "Body.")


def test_json_fields_map_onto_the_same_definition_as_frontmatter() -> None:
    found = agents.parse_json_definitions(json.dumps({"reviewer": REVIEWER}))
    reviewer = found["reviewer"]
    assert (reviewer.name, reviewer.description, reviewer.prompt) == (
        "reviewer",
        "Reviews code",
        "You review code and never change it.",
    )
    assert reviewer.tools == ("Read", "Grep") and reviewer.model == "sonnet" and reviewer.max_turns == 7
    assert agents.allowed_tools(reviewer)[-2:] == ["Read", "Grep"]
    scoped = agents.parse_json_definitions(
        '{"g": {"description": "d", "prompt": "p", "tools": "Bash(git:*), Read", "background": true}}'
    )["g"]
    assert scoped.tools == ("Bash", "Read") and scoped.background and str(scoped.scopes[0]) == "Bash(git:*)"


def test_given_definitions_win_over_the_projects_which_win_over_the_users(tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    define(Path.home() / ".claude" / "agents", "reviewer", "tools: Bash")
    define(Path.home() / ".claude" / "agents", "mine", "tools: Bash")
    define(cwd / ".claude" / "agents", "reviewer", "tools: Write")
    assert agents.resolve("reviewer", cwd).tools == ("Write",)
    assert agents.resolve("reviewer", cwd, json.dumps({"reviewer": REVIEWER})).tools == ("Read", "Grep")
    assert agents.resolve("mine", cwd, json.dumps({"reviewer": REVIEWER})).tools == ("Bash",)
    assert "reviewer" in agents.known_types(tmp_path, json.dumps({"reviewer": REVIEWER}))


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("{not json", "--agents: not JSON"),
        ('["reviewer"]', "--agents: give a JSON object"),
        ('{"r": "text"}', "agent 'r' must be an object"),
        ('{"r": {"prompt": "p"}}', "agent 'r' needs a 'description'"),
        ('{"r": {"description": "d"}}', "agent 'r' needs a 'prompt'"),
        ('{"r": {"description": "d", "prompt": "p", "tools": 3}}', "agent 'r': 'tools' must be"),
        ('{"r": {"description": "d", "prompt": "p", "maxTurns": 0}}', "agent 'r': 'maxTurns'"),
        ('{"r": {"description": "d", "prompt": "p", "tools": "Bash(git:*"}}', "agent 'r': 'tools'"),
        ('{"r": {"description": "d", "prompt": "p", "memory": "team"}}', "agent 'r': 'memory'"),
    ],
)
def test_bad_json_is_one_line_naming_the_agent_and_the_field(given: str, said: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        agents.parse_json_definitions(given)
    assert said in caught.value.message and "\n" not in caught.value.message


def test_every_agent_of_the_team_resolves_the_given_types(tmp_path: Path) -> None:
    """The supervisor (its options) and an agent process (its launch spec) resolve the same
    JSON types: a subagent's spec takes the definition's model, a runner offers its tools."""
    given = json.dumps({"reviewer": REVIEWER})
    context = TeamContext("t", tmp_path, "s", SupervisorOptions(agents=given), 1)
    config = TeamConfig(
        name="t", members=[Member(agent_id="team-lead@t", name="team-lead", cwd=str(tmp_path))]
    )
    options = SubagentOptions(parent="team-lead", prompt="p", agent_type="reviewer")
    spec = subagent_spec(context, config, options, None)
    assert spec.model == "sonnet" and spec.agents == given  # what it passes on to its own subagents
    runner = AgentRunner(
        msgspec.structs.replace(spec, wake="poll", model="offline"), PollChannel(), policy=ModePolicy()
    )
    assert set(runner.tools.names()) == {*agents.COORDINATION, "Read", "Grep"}
    with pytest.raises(InvalidInput, match="unknown agent type 'reviewer'"):
        subagent_spec(TeamContext("t", tmp_path, "s", SupervisorOptions(), 1), config, options, None)


@pytest.mark.heavy  # a lead, its supervisor and a teammate started for real: several seconds
def test_a_lead_spawns_a_teammate_of_a_json_defined_type_with_its_tools(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lead's Agent call names the JSON type: the teammate's requests offer its tools (and
    the coordination tools), not the project's file of the same name, and carry its prompt."""
    define(root / ".claude" / "agents", "reviewer", "tools: Bash, Write")

    def script(request: dict[str, Any], n: int) -> Reply:
        system = text_of(request["system"])
        if "You are team-lead" not in system:
            return text("Ready to review.")
        if "GOAL" in last_user_text(request) and not tool_result_ids(request):
            spawn = {
                "description": "a reviewer",
                "name": "rev",
                "prompt": "Wait for work.",
                "subagent_type": "reviewer",
                "model": LEAD_MODEL,
            }
            return tool_uses(("s1", "Agent", spawn))
        return text("The reviewer is ready.")

    with serve(script, monkeypatch) as api:
        team = Team.create("t", root=root, cwd=str(root))
        result = team.lead(
            "GOAL: get a reviewer.", model=LEAD_MODEL, timeout=60, agents={"reviewer": REVIEWER}
        )
    assert result.stopped_by == "done", result
    member = team.config().member("rev")
    assert member is not None and member.agent_type == "reviewer"
    mates = [r for r in api.requests if "You are team-lead" not in text_of(r["system"])]
    assert mates, "the teammate never asked the model"
    offered = {t["name"] for t in mates[0]["tools"]}
    assert {"Read", "Grep", "SendMessage", "TaskUpdate"} <= offered
    assert not offered & {"Bash", "Write", "Edit", "Agent"}
    assert "You review code and never change it." in text_of(mates[0]["system"])
    nothing_left_under(root)


def test_a_malformed_agents_flag_is_one_line_exit_2_and_nothing_started(root: Path) -> None:
    refused = cli(root, "lead", "fresh", "--prompt", "GOAL", "--agents", '{"r": {"prompt": "p"}}', ok=False)
    assert refused.returncode == 2 and "argument --agents: agent 'r' needs a 'description'" in refused.stderr
    assert not Team("fresh", root=root).store.exists()  # the lead would have made the team
    cli(root, "team", "create", "fresh")
    refused = cli(root, "up", "fresh", "--agents", "{oops", ok=False)
    assert refused.returncode == 2 and "argument --agents: not JSON" in refused.stderr
    assert Team("fresh", root=root).supervisor_pid() is None
    nothing_left_under(root)


def test_a_claude_code_teammate_is_given_the_teams_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = agents_json({"reviewer": REVIEWER})  # Team.up(agents=dict) / team.lead(agents=dict)
    assert json.loads(given) == {"reviewer": REVIEWER} and agents_json(given) == given
    with pytest.raises(InvalidInput, match="JSON text or a dict"):
        agents_json(["reviewer"])
    spec = launch_spec(tmp_path, agents=given)
    assert LaunchSpec.from_argv(spec.to_argv(), spec.to_env()).agents == given  # what a teammate reads
    (tmp_path / "claude").write_text("")
    monkeypatch.setenv("AGENTTEAMS_CLAUDE_BIN", str(tmp_path / "claude"))
    assert claude_code.argv(spec)[-2:] == ["--agents", given]
