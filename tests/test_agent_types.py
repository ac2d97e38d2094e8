"""Agent types and custom definitions restrict the tools a model is offered and can call."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentproc import agents
from agentproc.channel import PollChannel
from agentproc.context import AgentContext
from agentproc.identity import Identity
from agentproc.tools import toolbox_for

COORD = {"SendMessage", "TaskCreate", "TaskGet", "TaskUpdate", "TaskList"}


def context(cwd: Path, agent_type: str = "general-purpose") -> AgentContext:
    identity = Identity(
        agent_id="a@t", name="a", team="t", color="blue", parent_session_id="s", agent_type=agent_type, model="offline",
        plan_mode_required=False, permission_mode="", root=cwd, cwd=cwd, wake="poll", wake_endpoint="",
        fallback_poll=5.0, incarnation_ms=0, supervisor_pid=0,
    )
    return AgentContext(identity=identity, channel=PollChannel())


@pytest.mark.parametrize(("agent_type", "work"), [
    ("general-purpose", {"Bash", "Read", "Write", "Edit", "Glob", "Grep", "ExitPlanMode"}),
    ("Explore", {"Read", "Glob", "Grep"}),
    ("Plan", {"Read", "Glob", "Grep", "ExitPlanMode"}),
    ("Bash", {"Bash"}),
])
def test_builtin_types(tmp_path: Path, agent_type: str, work: set[str]) -> None:
    ctx = context(tmp_path, agent_type)
    box = toolbox_for(ctx, agents.resolve(agent_type, tmp_path))
    assert {s["name"] for s in box.schemas()} == COORD | work


def test_a_tool_outside_the_type_cannot_be_called(tmp_path: Path) -> None:
    ctx = context(tmp_path, "Explore")
    box = toolbox_for(ctx, agents.resolve("Explore", tmp_path))
    result = box.call("Bash", {"command": "touch nope"})
    assert result.is_error and "no tool named 'Bash'" in result.content
    assert not (tmp_path / "nope").exists()


def test_custom_definition_from_frontmatter(tmp_path: Path) -> None:
    folder = tmp_path / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep, Bash\ndisallowedTools: Bash\n"
        "model: anthropic:claude-test\nmaxTurns: 7\npermissionMode: plan\n---\nYou review code carefully.\n"
    )
    definition = agents.resolve("reviewer", tmp_path)
    assert definition.prompt == "You review code carefully." and definition.max_turns == 7
    assert definition.permission_mode == "plan" and definition.model == "anthropic:claude-test"
    box = toolbox_for(context(tmp_path, "reviewer"), definition)
    assert set(box.names()) == COORD | {"Read", "Grep"}


def test_a_broken_definition_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / ".claude" / "agents"
    folder.mkdir(parents=True)
    (folder / "bad.md").write_text("---\ndescription: no name\n---\nbody")
    assert agents.load_definitions(tmp_path) == {}


def test_plan_mode_offers_only_read_only_and_coordination_tools(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    ctx.plan_mode = True
    box = toolbox_for(ctx, agents.resolve("general-purpose", tmp_path))
    assert {s["name"] for s in box.schemas()} == COORD | {"Read", "Glob", "Grep", "ExitPlanMode"}
    denied = box.call("Write", {"file_path": "x.txt", "content": "x"})
    assert denied.is_error and "plan mode" in denied.content and not (tmp_path / "x.txt").exists()


def test_file_tools(tmp_path: Path) -> None:
    box = toolbox_for(context(tmp_path), agents.resolve("general-purpose", tmp_path))
    assert not box.call("Write", {"file_path": "a.txt", "content": "one\ntwo two\n"}).is_error
    assert "     2\ttwo two" in box.call("Read", {"file_path": "a.txt"}).content
    assert box.call("Edit", {"file_path": "a.txt", "old_string": "two", "new_string": "2"}).is_error  # ambiguous
    assert not box.call("Edit", {"file_path": "a.txt", "old_string": "two", "new_string": "2", "replace_all": True}).is_error
    assert (tmp_path / "a.txt").read_text() == "one\n2 2\n"
    assert box.call("Glob", {"pattern": "*.txt"}).content.endswith("a.txt")
    assert box.call("Grep", {"pattern": "^one", "output_mode": "content"}).content.endswith("a.txt:1:one")


def test_bash_path_heuristic() -> None:
    from agentproc.permissions import bash_paths

    assert bash_paths("mkdir -p /tmp/delegate-test") == ["/tmp/delegate-test"]
    assert bash_paths("echo x > /etc/motd; cat <../up.txt") == ["/etc/motd", "../up.txt"]
    assert bash_paths("awk -F'|' '/ total / {print $3}' report.md") == []
    assert bash_paths("awk '/total/ {print}' report.md") == []  # /total does not exist
    assert bash_paths("cp a.txt OUT=/var/tmp/x") == ["/var/tmp/x"]


def test_teammate_state_machine_refuses_invalid_transitions() -> None:
    from supervisor.states import InvalidTransition, SpawnSpec, Teammate, TeammateState

    spec = SpawnSpec(name="a", agent_id="a@t", color="blue", model="offline", agent_type="x",
                     plan_mode_required=False, permission_mode="", cwd="/")
    mate = Teammate(spec=spec)
    mate.to(TeammateState.STARTING)
    mate.to(TeammateState.IDLE)
    mate.to(TeammateState.STOPPING)
    with pytest.raises(InvalidTransition):
        mate.to(TeammateState.RUNNING)  # a stop is never undone
    mate.to(TeammateState.EXITED)
    mate.to(TeammateState.FAILED)
    with pytest.raises(InvalidTransition):
        mate.to(TeammateState.IDLE)
