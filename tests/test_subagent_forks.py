"""Fork workers and bubbling permissions, the quick parts (no process, no model): where a
fork's conversation starts, what the gate and the definitions say, what a fork is started as.
The end-to-end runs against the local Messages API are in tests/test_subagent_kinds.py."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from agentproc import bubble, fork
from agentproc.channel import PollChannel
from agentproc.context import AgentContext
from agentproc.permissions import ModePolicy
from agentproc.tools import ALL_TOOLS, toolbox_for
from agentproc.tools.base import Decision
from agentproc.tools.bash import BASH
from agentproc.transcript import Transcript
from ipc import agents
from ipc.agents import parse_definition
from ipc.errors import NotFound
from ipc.launch import LaunchSpec, SupervisorOptions
from ipc.paths import TeamPaths
from ipc.permission_rules import Rule
from ipc.replies import SubagentResult
from ipc.schemas import PermissionRequest
from ipc.subagents import ForkBase, read_fork_base, take_answer, write_fork_base
from ipc.subagents import ask as put_ask
from ipc.subagents import read as read_record
from ipc.subagents import write as write_record
from tests.agent_helpers import launch_spec

CALL = [
    {"type": "text", "text": "Two helpers."},
    {"type": "tool_use", "id": "f1", "name": "Agent", "input": {"prompt": "one"}},
    {"type": "tool_use", "id": "f2", "name": "Agent", "input": {"prompt": "two"}},
]


def spec(root: Path, team: str, name: str = "sub-1") -> LaunchSpec:
    return launch_spec(root, team, name, role="subagent", parent="alice", subagent_id=name, fork=True)


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
    options = SupervisorOptions.from_argv(["--fork-subagents"])
    assert options.fork_subagents is True
    flags = spec(Path("/r"), "t")
    env = msgspec.structs.replace(flags, fork_subagents=True).to_env()
    assert env["AGENTTEAMS_FORK_SUBAGENTS"] == "1" and env["AGENTTEAMS_FORK"] == "1"
    back = LaunchSpec.from_argv(flags.to_argv(), env)
    assert back.fork_subagents and back.fork


def parent(root: Path, team: str, role: str) -> AgentContext:
    flags = launch_spec(root, team, "team-lead" if role == "lead" else "alice", wake="poll", role=role)
    ctx = AgentContext(spec=flags, channel=PollChannel())
    ctx.tool_named = {t.name: t for t in ALL_TOOLS}.get
    return ctx


def asking(ctx: AgentContext, sub: str, tool: str, args: dict[str, object]) -> PermissionRequest:
    write_record(ctx.paths, SubagentResult(id=sub, parent=ctx.name))
    request = PermissionRequest(
        request_id=f"perm-{sub}", agent_id=sub, tool_name=tool, tool_use_id="u", description="d", input=args
    )
    put_ask(ctx.paths, sub, request)
    return request


def test_a_parent_answers_its_subagents_requests_by_its_own_mode_and_rules(
    root: Path, team: str, tmp_path: Path
) -> None:
    ctx = parent(root, team, "lead")
    ctx.rules.add("deny", [Rule("Bash", "rm:*")])
    asking(ctx, "sub-in", "Read", {"file_path": str(root / "a.txt")})  # inside its cwd: allowed
    asking(ctx, "sub-rm", "Bash", {"command": "rm -f x"})  # its own rule denies it
    outside = asking(ctx, "sub-out", "Read", {"file_path": str(tmp_path / "elsewhere.txt")})
    ids = ["sub-in", "sub-rm", "sub-out"]
    # Waiting on a synchronous subagent, the lead cannot take a turn: denied, saying why.
    assert bubble.answer_pending(ctx, ids, can_take_turn=False) is None
    granted = take_answer(ctx.paths, "sub-in", "perm-sub-in")
    assert granted is not None and granted.approved
    refused = take_answer(ctx.paths, "sub-rm", "perm-sub-rm")
    assert refused is not None and not refused.approved and "Bash(rm:*)" in refused.reason
    busy = take_answer(ctx.paths, "sub-out", "perm-sub-out")
    assert busy is not None and not busy.approved and busy.reason == bubble.LEAD_BUSY
    # Free to take a turn, the lead puts what it would ask about itself to its model, once.
    put_ask(ctx.paths, "sub-out", outside)
    assert bubble.answer_pending(ctx, ids, can_take_turn=True) == outside
    assert bubble.answer_pending(ctx, ids, can_take_turn=True) is None
    assert not bubble.answer_from_lead(ctx, "sub-out", "perm-other", True, "")
    assert bubble.answer_from_lead(ctx, "sub-out", outside.request_id, False, "not there")
    told = take_answer(ctx.paths, "sub-out", outside.request_id)
    assert told is not None and not told.approved and told.reason == "not there"
    assert read_record(ctx.paths, "sub-out").asking is None


def test_a_bypassing_parent_grants_what_its_subagent_asks_and_a_timeout_withdraws_the_request(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = parent(root, team, "teammate")
    ctx.permission_mode = "bypassPermissions"
    asking(ctx, "sub-1", "Bash", {"command": "curl https://example.com"})
    assert bubble.answer_pending(ctx, ["sub-1"], can_take_turn=False) is None
    got = take_answer(ctx.paths, "sub-1", "perm-sub-1")
    assert got is not None and got.approved
    # A subagent nobody answers is denied at the permission timeout, its request withdrawn.
    monkeypatch.setenv("AGENTTEAMS_PERMISSION_TIMEOUT", "0.2")
    sub = AgentContext(spec=msgspec.structs.replace(spec(root, team), wake="poll"), channel=PollChannel())
    write_record(ctx.paths, SubagentResult(id="sub-1", parent="alice"))
    approved, _, reason = bubble.BubblePolicy().ask(
        sub, BASH, "u", {"command": "curl x"}, Decision("ask", "r")
    )
    assert not approved and "alice gave no answer" in reason
    assert read_record(ctx.paths, "sub-1").asking is None


def test_launch_checks_a_denied_agent_type_is_an_error_and_an_in_process_teammate_starts_nothing_in_the_background(
    root: Path, team: str
) -> None:
    ctx = parent(root, team, "teammate")
    ctx.rules.add("deny", [Rule("Agent", "Explore")])
    tools = toolbox_for(ctx, agents.resolve("general-purpose", ctx.cwd), ModePolicy())
    denied = tools.call("Agent", {"description": "d", "prompt": "p", "subagent_type": "Explore"})
    assert denied.is_error and "Agent(Explore) denies" in denied.content  # no other type instead
    ctx.spec = msgspec.structs.replace(ctx.spec, backend="in-process")
    for call in (
        {"description": "d", "prompt": "p", "run_in_background": True},
        {"description": "d", "prompt": "p"},  # with the fork gate on: a fork, which is in the background
    ):
        ctx.spec = msgspec.structs.replace(ctx.spec, fork_subagents="run_in_background" not in call)
        refused = tools.call("Agent", call)
        assert refused.is_error and "an in-process teammate cannot start background agents" in refused.content
    assert not (ctx.paths.team_dir / "subagents").exists()  # nothing was started
