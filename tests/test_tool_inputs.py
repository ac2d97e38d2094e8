"""Tool inputs: each tool's schema and description come from its input Struct, and an input
that does not decode reaches the model as a one-line tool error naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from agentproc.channel import PollChannel
from agentproc.context import AgentContext
from agentproc.models import ModelContext, Turn
from agentproc.models.anthropic_model import AnthropicModel
from agentproc.permissions import ModePolicy
from agentproc.tools import ALL_TOOLS, ToolBox, toolbox_for
from agentproc.tools.agent import TASK_BACKGROUND
from agentproc.tools.lead import TEAM_CREATE, TEAM_DELETE
from agentproc.transcript import Transcript
from ipc import agents, tool_inputs
from ipc.launch import LaunchSpec
from ipc.tasks import TaskList
from ipc.tool_inputs import SendMessageInput
from tests.fake_anthropic import FakeAnthropic, Reply, text, tool_uses

TOOLS = [*ALL_TOOLS, TEAM_CREATE, TEAM_DELETE, TASK_BACKGROUND]


def context(root: Path, team: str, name: str = "alice") -> AgentContext:
    spec = LaunchSpec(
        agent_id=f"{name}@{team}",
        agent_name=name,
        team_name=team,
        agent_color="blue",
        parent_session_id="s",
        root=str(root),
        cwd=str(root),
        wake="poll",
    )
    return AgentContext(spec=spec, channel=PollChannel())


def box(ctx: AgentContext) -> ToolBox:
    return toolbox_for(ctx, agents.resolve("general-purpose", ctx.cwd), ModePolicy())


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_each_tools_schema_and_description_come_from_its_input_struct(tool: Any) -> None:
    shown = tool.schema()
    schema = shown["input_schema"]
    assert shown["description"] == tool_inputs.description(tool.input) and shown["description"]
    fields = msgspec.structs.fields(tool.input)
    assert schema["type"] == "object" and "$ref" not in schema and "title" not in schema
    assert list(schema["properties"]) == [f.encode_name for f in fields]
    assert schema.get("required", []) == [f.encode_name for f in fields if f.required]
    for name, prop in schema["properties"].items():
        assert "anyOf" not in prop or {"type": "null"} not in prop["anyOf"], name  # optional: plain type


def test_claude_codes_names_are_the_wire_names() -> None:
    update = tool_inputs.input_schema(tool_inputs.TaskUpdateInput)
    assert {"taskId", "activeForm", "addBlocks", "addBlockedBy"} <= set(update["properties"])
    assert update["properties"]["status"] == {
        "type": "string",
        "enum": ["completed", "deleted", "in_progress", "pending"],
    }
    edit = tool_inputs.input_schema(tool_inputs.EditInput)
    assert edit["required"] == ["file_path", "old_string", "new_string"]


def test_both_send_message_spellings_decode_to_one() -> None:
    old = msgspec.convert(
        {"type": "shutdown_response", "request_id": "r1", "approve": True, "recipient": "team-lead"},
        SendMessageInput,
    )
    new = msgspec.convert(
        {"to": "team-lead", "message": {"type": "shutdown_response", "request_id": "r1", "approve": True}},
        SendMessageInput,
    )
    assert (old.kind, old.request_id, old.approve, old.recipient) == (
        new.kind,
        new.request_id,
        new.approve,
        new.recipient,
    )
    dm = msgspec.convert({"to": "bob", "message": "Hello there\nmore", "extra": 1}, SendMessageInput)
    assert (dm.kind, dm.recipient, dm.content, dm.summary) == (
        "message",
        "bob",
        "Hello there\nmore",
        "Hello there",
    )


def test_a_wrong_input_is_one_line_naming_the_field_and_what_it_must_be(root: Path, team: str) -> None:
    tools = box(context(root, team))
    cases = [
        ("Bash", '{"command": "true", "timeout": 0}', "'timeout' expected int >= 1"),
        ("TaskUpdate", '{"status": "pending"}', "'taskId' is required"),
        (
            "TaskUpdate",
            '{"taskId": "1", "status": "done"}',
            "'status' must be one of pending, in_progress, completed, deleted, not 'done'",
        ),
        ("TaskGet", '{"taskId": 1}', "'taskId' expected str, got int"),
        ("Task", '{"prompt": "p"}', "'description' is required"),  # 2.1.38's name for Agent
    ]
    for name, raw, problem in cases:
        result = tools.call(name, msgspec.json.decode(raw))
        tool = "Agent" if name == "Task" else name
        assert result.is_error and result.content == f"Error: invalid {tool} input: {problem}"
    # Unknown fields and nulls are the model's business: the call runs.
    assert not tools.call("TaskList", {"verbose": True, "filter": None}).is_error


def test_an_agents_task_tools_read_a_task_id_with_leading_zeros_as_that_number(root: Path, team: str) -> None:
    """'01' is task #1 at every door; to an agent's own task tools it was another task
    ("task #01 does not exist")."""
    tools = box(context(root, team))
    for subject in ("first", "second"):
        assert not tools.call("TaskCreate", {"subject": subject, "description": ""}).is_error
    got = tools.call("TaskGet", {"taskId": "01"})
    assert not got.is_error and json.loads(got.content)["task"]["subject"] == "first", got.content
    assert not tools.call("TaskUpdate", {"taskId": "002", "addBlockedBy": ["01"]}).is_error
    made = tools.call("TaskCreate", {"subject": "third", "description": "", "addBlockedBy": ["02"]})
    assert not made.is_error, made.content
    tasks = TaskList(root, team)
    assert tasks.get("2").blocked_by == ["1"] and tasks.get("3").blocked_by == ["2"]


def test_a_decode_error_reaches_the_model_as_a_tool_result_and_the_turn_goes_on(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def script(request: dict[str, Any], n: int) -> Reply:
        if n == 1:
            return tool_uses(
                ("bad", "Read", {"file_path": "a.txt", "offset": "first"}),
                ("good", "TaskList", {}),
            )
        return text("Noted.")

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("AGENTTEAMS_API_RETRIES", "0")
    with FakeAnthropic(script) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        ctx = context(root, team)
        ctx.transcript = Transcript(ctx.paths, ctx.name)
        definition = agents.resolve("general-purpose", ctx.cwd)
        model = AnthropicModel("claude-test", ModelContext(ctx.spec, definition, ctx.transcript))
        outcome = model.run_turn(Turn(kind="user", text="go"), box(ctx))
    assert outcome.final_text == "Noted." and not outcome.failure_reason
    bad, good = api.requests[1]["messages"][-1]["content"]
    assert bad["tool_use_id"] == "bad" and bad["is_error"] is True
    assert bad["content"] == "Error: invalid Read input: 'offset' expected int, got str"
    assert good["tool_use_id"] == "good" and "is_error" not in good
    # The transcript keeps the input as the model sent it.
    assert '"offset": "first"' in ctx.transcript.path.read_text()
