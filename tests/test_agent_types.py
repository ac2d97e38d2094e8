"""Agent types, custom definitions and the permission policy restrict what a model is
offered and can call."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentproc.channel import PollChannel
from agentproc.context import AgentContext
from agentproc.permissions import ModePolicy
from agentproc.tools import ToolBox, toolbox_for
from agentproc.tools.bash import command_paths
from ipc import agents, subagents
from ipc.errors import InvalidInput
from ipc.launch import LaunchSpec
from ipc.paths import TeamPaths
from ipc.replies import SubagentResult

COORD = {"SendMessage", "TaskCreate", "TaskGet", "TaskUpdate", "TaskList"}


def context(cwd: Path, agent_type: str = "general-purpose", mode: str = "") -> AgentContext:
    spec = LaunchSpec(
        agent_id="a@t",
        agent_name="a",
        team_name="t",
        agent_color="blue",
        parent_session_id="s",
        agent_type=agent_type,
        permission_mode=mode,
        root=str(cwd),
        cwd=str(cwd),
        wake="poll",
    )
    ctx = AgentContext(spec=spec, channel=PollChannel())
    ctx.permission_mode = mode or "acceptEdits"
    return ctx


def box(cwd: Path, agent_type: str = "general-purpose", mode: str = "") -> ToolBox:
    return toolbox_for(context(cwd, agent_type, mode), agents.resolve(agent_type, cwd), ModePolicy())


@pytest.mark.parametrize(
    ("agent_type", "work"),
    [
        (
            "general-purpose",
            {
                "Bash",
                "Read",
                "Write",
                "Edit",
                "Glob",
                "Grep",
                "WebFetch",
                "EnterPlanMode",
                "ExitPlanMode",
                "Agent",
                "TaskOutput",
                "TaskStop",
            },
        ),
        ("Explore", {"Read", "Glob", "Grep", "WebFetch"}),
        ("Plan", {"Read", "Glob", "Grep", "WebFetch", "ExitPlanMode"}),
        ("Bash", {"Bash"}),
    ],
)
def test_builtin_types(tmp_path: Path, agent_type: str, work: set[str]) -> None:
    assert {s["name"] for s in box(tmp_path, agent_type).schemas()} == COORD | work


def test_an_unknown_agent_type_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(
        InvalidInput, match="unknown agent type 'Reviewer'; known: general-purpose, Explore, Plan, Bash"
    ):
        agents.resolve("Reviewer", tmp_path)


def test_a_tool_outside_the_type_cannot_be_called(tmp_path: Path) -> None:
    result = box(tmp_path, "Explore").call("Bash", {"command": "touch nope"})
    assert result.is_error and "no tool named 'Bash'" in result.content
    assert not (tmp_path / "nope").exists()


def _definition(tmp_path: Path, name: str, text: str) -> None:
    folder = tmp_path / ".claude" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(text)


def test_custom_definition_from_frontmatter(tmp_path: Path) -> None:
    _definition(
        tmp_path,
        "reviewer",
        "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep, Bash\ndisallowedTools: Bash\n"
        "model: anthropic:claude-test\nmaxTurns: 7\npermissionMode: plan\n---\nYou review code carefully.\n",
    )
    definition = agents.resolve("reviewer", tmp_path)
    assert definition.prompt == "You review code carefully." and definition.max_turns == 7
    assert definition.permission_mode == "plan" and definition.model == "anthropic:claude-test"
    assert set(box(tmp_path, "reviewer").names()) == COORD | {"Read", "Grep"}


def test_tools_as_a_yaml_block_list_restrict_as_they_say(tmp_path: Path) -> None:
    # Read as "no restriction", this once gave a reviewer Bash and Write.
    _definition(tmp_path, "reader", "---\nname: reader\ntools:\n  - Read\n  - Grep\n---\nRead only.\n")
    assert set(box(tmp_path, "reader").names()) == COORD | {"Read", "Grep"}


def test_a_definition_that_cannot_be_read_is_never_widened_into_all_tools(tmp_path: Path) -> None:
    _definition(tmp_path, "odd", "---\nname: odd\ntools: {Read: yes}\n---\nbody")
    _definition(tmp_path, "bad", "---\ndescription: no name\n---\nbody")
    assert agents.load_definitions(tmp_path) == {}
    with pytest.raises(InvalidInput, match="unknown agent type 'odd'"):
        agents.resolve("odd", tmp_path)


def test_plan_mode_offers_only_read_only_and_coordination_tools(tmp_path: Path) -> None:
    tools = box(tmp_path)
    tools.ctx.plan_mode = True
    # Subagents stay offered: one started in plan mode runs in plan mode (tools/agent.py).
    delegation = {"Agent", "TaskOutput", "TaskStop"}
    assert {s["name"] for s in tools.schemas()} == COORD | {
        "Read",
        "Glob",
        "Grep",
        "WebFetch",
        "EnterPlanMode",
        "ExitPlanMode",
    } | delegation
    denied = tools.call("Write", {"file_path": "x.txt", "content": "x"})
    assert denied.is_error and "plan mode" in denied.content and not (tmp_path / "x.txt").exists()


def test_file_tools(tmp_path: Path) -> None:
    tools = box(tmp_path)
    assert not tools.call("Write", {"file_path": "a.txt", "content": "one\ntwo two\n"}).is_error
    assert "     2\ttwo two" in tools.call("Read", {"file_path": "a.txt"}).content
    assert tools.call(
        "Edit", {"file_path": "a.txt", "old_string": "two", "new_string": "2"}
    ).is_error  # ambiguous
    assert not tools.call(
        "Edit", {"file_path": "a.txt", "old_string": "two", "new_string": "2", "replace_all": True}
    ).is_error
    assert (tmp_path / "a.txt").read_text() == "one\n2 2\n"
    assert tools.call("Glob", {"pattern": "*.txt"}).content.endswith("a.txt")
    assert tools.call("Grep", {"pattern": "^one", "output_mode": "content"}).content.endswith("a.txt:1:one")


def test_bash_path_heuristic() -> None:
    assert command_paths("mkdir -p /tmp/delegate-test") == ["/tmp/delegate-test"]
    assert command_paths("echo x > /etc/motd; cat <../up.txt") == ["/etc/motd", "../up.txt"]
    assert command_paths("awk -F'|' '/ total / {print $3}' report.md") == []  # $ inside single quotes
    assert command_paths("awk '/total/ {print}' report.md") == []  # /total does not exist
    assert command_paths("cp a.txt OUT=/var/tmp/x") == ["/var/tmp/x"]
    assert command_paths("cd sub && ls") == ["sub"]


@pytest.mark.parametrize(
    "command",
    [
        "cd .. && touch x",
        "cd $HOME; touch x",
        "touch $(dirname $PWD)/x",
        "touch `dirname $PWD`/x",
        'echo "$HOME"',
        "cd; touch x",
        "cd - && touch x",
        "pushd /etc",
    ],
)
def test_commands_that_may_leave_the_cwd_ask_in_accept_edits(tmp_path: Path, command: str) -> None:
    tools = box(tmp_path)
    tool = tools.tools["Bash"]
    decision = tools.policy.decide(tools.ctx, tool, {"command": command})
    assert decision.action == "ask", f"{command!r} ran without asking"


def test_commands_inside_the_cwd_run_without_asking(tmp_path: Path) -> None:
    tools = box(tmp_path)
    tool = tools.tools["Bash"]
    for command in (
        f"cd {tmp_path} && split -n l/2 data.csv part-",
        "wc -l < data.csv",
        "awk '{print $1}' a.txt",
    ):
        assert tools.policy.decide(tools.ctx, tool, {"command": command}).action == "allow", command


def test_expansions_the_command_defines_itself_are_known() -> None:
    assert command_paths("for i in 1 2 3; do seq 1 $((i * 1000)) > text-$i.txt; done") == []
    assert command_paths("N=3; echo $N $? $1 ${N}") == []
    assert command_paths("echo $HOME")[0].startswith("?the variable $HOME")
    assert command_paths("ls $(pwd)")[0].startswith("?a command substitution")


def test_a_look_for_running_subagents_reads_each_ended_one_only_once(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = TeamPaths(root, team)
    for result in [
        SubagentResult(id="s1", parent="alice", status="running"),
        SubagentResult(id="s2", parent="alice", status="completed"),
        SubagentResult(id="s3", parent="bob", status="running"),
    ]:
        subagents.write(paths, result)
    reads: list[str] = []
    real = subagents.read

    def counted(at: TeamPaths, sid: str) -> SubagentResult:
        reads.append(sid)
        return real(at, sid)

    monkeypatch.setattr(subagents, "read", counted)
    settled: set[str] = set()
    assert subagents.running_of(paths, "alice", settled) == ["s1"]
    assert settled == {"s2", "s3"}
    subagents.finish(paths, "s1", "completed", result="done")
    reads.clear()
    assert subagents.running_of(paths, "alice", settled) == []
    assert reads == ["s1"] and settled == {"s1", "s2", "s3"}
