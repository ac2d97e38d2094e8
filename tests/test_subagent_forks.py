"""Fork workers and bubbling permissions, the quick parts (no process, no model): where a
fork's conversation starts, what the gate and the definitions say, what a fork is started as.
The end-to-end runs against the local Messages API are in tests/test_subagent_kinds.py."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from agentproc import fork
from agentproc.transcript import Transcript
from ipc.agents import parse_definition
from ipc.errors import NotFound
from ipc.launch import LaunchSpec
from ipc.paths import TeamPaths
from ipc.replies import SubagentResult
from ipc.subagents import ForkBase, read_fork_base, write_fork_base

CALL = [
    {"type": "text", "text": "Two helpers."},
    {"type": "tool_use", "id": "f1", "name": "Agent", "input": {"prompt": "one"}},
    {"type": "tool_use", "id": "f2", "name": "Agent", "input": {"prompt": "two"}},
]


def spec(root: Path, team: str, name: str = "sub-1") -> LaunchSpec:
    return LaunchSpec(
        agent_id=f"{name}@{team}",
        agent_name=name,
        team_name=team,
        agent_color="blue",
        parent_session_id="s",
        root=str(root),
        cwd=str(root),
        role="subagent",
        parent="alice",
        subagent_id=name,
        fork=True,
    )


def test_a_fork_starts_from_its_parents_conversation_through_the_call_with_placeholder_answers(
    root: Path, team: str
) -> None:
    paths = TeamPaths(root, team)
    parent = Transcript(paths, "alice")
    parent.append("user", "the goal")
    parent.append("assistant", CALL)
    Transcript(paths, "alice", sidechain="sub-0").append("user", "another subagent's line")
    record = SubagentResult(id="sub-1", parent="alice", fork=True, fork_call="f2")
    fork.seed(spec(root, team), record)
    own = Transcript(paths, "alice", sidechain="sub-1").messages()
    assert own[:2] == [{"role": "user", "content": "the goal"}, {"role": "assistant", "content": CALL}]
    assert own[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "f1", "content": fork.PLACEHOLDER},
            {"type": "tool_result", "tool_use_id": "f2", "content": fork.PLACEHOLDER},
        ],
    }
    # Its parent's own conversation is untouched: the fork's lines are a sidechain.
    assert parent.messages() == [{"role": "user", "content": "the goal"}]
    # Seeded once: a resumed fork goes on from its own lines.
    parent.append("user", [{"type": "tool_result", "tool_use_id": "f1", "content": "launched"}])
    fork.seed(spec(root, team), record)
    assert Transcript(paths, "alice", sidechain="sub-1").messages() == own


def test_a_call_that_is_not_in_the_transcript_is_not_found(root: Path, team: str) -> None:
    parent = Transcript(TeamPaths(root, team), "alice")
    parent.append("user", "the goal")
    with pytest.raises(NotFound, match="no call 'nope'"):
        parent.through("nope")


def test_the_fork_base_is_kept_byte_for_byte(root: Path, team: str) -> None:
    paths = TeamPaths(root, team)
    tools = [{"name": "Bash", "description": "Run ü", "input_schema": {"type": "object", "properties": {}}}]
    write_fork_base(paths, "alice", "f1", ForkBase(system="You are alice.", tools=tools))
    assert read_fork_base(paths, "alice", "f1") == ForkBase(system="You are alice.", tools=tools)
    with pytest.raises(NotFound):
        read_fork_base(paths, "alice", "f2")


def test_a_definition_sets_its_own_fork_gate_and_only_true_or_false() -> None:
    assert parse_definition("---\nname: a\nforkSubagent: true\n---\nx").fork_subagent is True
    assert parse_definition("---\nname: a\n---\nx").fork_subagent is None
    with pytest.raises(ValueError, match="'forkSubagent' must be true or false"):
        parse_definition("---\nname: a\nforkSubagent: yes please\n---\nx")


def test_the_fork_gate_is_a_team_option_passed_to_every_agent() -> None:
    from ipc.launch import SupervisorOptions

    options = SupervisorOptions.from_argv(["--fork-subagents"])
    assert options.fork_subagents is True
    flags = spec(Path("/r"), "t")
    env = msgspec.structs.replace(flags, fork_subagents=True).to_env()
    assert env["AGENTTEAMS_FORK_SUBAGENTS"] == "1" and env["AGENTTEAMS_FORK"] == "1"
    back = LaunchSpec.from_argv(flags.to_argv(), env)
    assert back.fork_subagents and back.fork
