"""Hooks as Claude Code runs them (every settings file, the definition's own, command, prompt
and agent hooks, SubagentStart and SubagentStop) and subagents continued (messaged, resumed,
Claude Code's result shapes), with the real SDK against the local Messages API server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentproc import hooks
from ipc import subagents as subagents_file
from ipc.paths import TeamPaths
from ipc.replies import SubagentResult
from tests.agent_helpers import LEAD_MODEL, define, serve
from tests.fake_anthropic import (
    Reply,
    last_user_text,
    message,
    text,
    text_of,
    tool_result_ids,
    tool_uses,
)
from tests.runtime_helpers import running_team
from tests.test_agent_rules import runner, settings

pytestmark = pytest.mark.usefixtures("own_home")


# ---------------------------------------------------------------- 7. hooks


def test_hooks_come_from_every_settings_file_in_claude_codes_words(tmp_path: Path) -> None:
    hook = {"hooks": [{"type": "command", "command": "echo 'tests are missing' >&2; exit 2"}]}
    settings(Path.home() / ".claude" / "settings.json", {"hooks": {"TaskCompleted": [hook]}})
    start = {"hooks": [{"type": "command", "command": "echo 'context from the hook'"}], "matcher": "Explore"}
    settings(tmp_path / ".claude" / "settings.local.json", {"hooks": {"SubagentStart": [start]}})
    ctx = runner(tmp_path).ctx
    blocked = hooks.run(ctx, "TaskCompleted", {"task_id": "1"})
    assert blocked.blocked and blocked.feedback == "TaskCompleted hook feedback: tests are missing"
    assert hooks.run(ctx, "SubagentStart", {"agent_type": "Explore"}).context == "context from the hook"
    assert hooks.run(ctx, "SubagentStart", {"agent_type": "Plan"}).context == ""  # the matcher


def test_a_prompt_hook_asks_a_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hook = {"type": "prompt", "prompt": "Do the tests pass? $ARGUMENTS"}
    settings(tmp_path / ".claude" / "settings.json", {"hooks": {"TaskCompleted": [{"hooks": [hook]}]}})
    answers = iter(['{"ok": false, "reason": "the tests fail"}', 'Sure. {"ok": true}'])
    with serve(lambda request, n: text(next(answers)), monkeypatch) as api:
        ctx = runner(tmp_path).ctx
        first = hooks.run(ctx, "TaskCompleted", {"task_id": "7"})
        assert first.blocked and first.feedback == "TaskCompleted hook feedback: the tests fail"
        assert not hooks.run(ctx, "TaskCompleted", {"task_id": "7"}).blocked
    asked = api.requests[0]
    assert asked["model"] == "claude-haiku-4-5" and '"task_id": "7"' in last_user_text(asked)


@pytest.mark.heavy  # ~5-12 s: in make test-heavy, to keep make test in its budget
def test_definition_hooks_subagent_start_and_stop_and_an_agent_hook(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subagent's definition hooks: SubagentStart's output is in its prompt, its Stop hook
    (SubagentStop) sends it back once. A TaskCompleted agent hook's subagent keeps the task
    open once, in Claude Code's words."""
    stop = "n=$(cat stop-count 2>/dev/null || echo 0); echo $((n+1)) > stop-count; [ $n -ge 1 ] || { echo 'add a summary' >&2; exit 2; }"
    front = {
        "SubagentStart": [{"hooks": [{"type": "command", "command": "echo 'The build is green.'"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": stop}]}],
    }
    define(root, "checker", "hooks: " + json.dumps(front))
    agent_hook = {"type": "agent", "prompt": "Is the changelog written?"}
    settings(root / ".claude" / "settings.json", {"hooks": {"TaskCompleted": [{"hooks": [agent_hook]}]}})
    verdicts = iter(['{"ok": false, "reason": "write the changelog"}', '{"ok": true}'])

    def script(request: dict[str, Any], n: int) -> Reply:
        said = last_user_text(request)
        if "You are a subagent" in text_of(request["system"]):
            if "Answer with JSON only" in text_of(request["messages"][0]["content"]):
                return text(next(verdicts))
            return text(
                "Summary: all good." if "SubagentStop hook feedback: add a summary" in said else "Checked."
            )
        ids = tool_result_ids(request)
        if ids == ["sub"]:
            return tool_uses(("done1", "TaskUpdate", {"taskId": "1", "status": "completed"}))
        if ids == ["done1"]:
            return tool_uses(("done2", "TaskUpdate", {"taskId": "1", "status": "completed"}))
        if ids:
            return text("Finished.")
        if "Start with task #1" in said:
            return tool_uses(
                ("sub", "Agent", {"description": "check", "prompt": "check it", "subagent_type": "checker"})
            )
        return text("Ready.")

    with serve(script, monkeypatch) as api, running_team(root) as team:
        team.spawn("ada", prompt="hello", model=LEAD_MODEL)
        task = team.tasks.create("Check and finish")
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=60)
    results = {r["messages"][-1]["content"][0]["tool_use_id"]: r for r in api.requests if tool_result_ids(r)}
    assert results["sub"]["messages"][-1]["content"][0]["content"].startswith(
        "Summary: all good.\n\nagentId: "
    )
    refused = results["done1"]["messages"][-1]["content"][0]
    assert (
        refused.get("is_error") and "TaskCompleted hook feedback: write the changelog" in refused["content"]
    )
    checker_first = next(r for r in api.requests if "check it" in text_of(r["messages"][0]["content"]))
    assert "The build is green." in text_of(checker_first["messages"][0]["content"])


# ---------------------------------------------------------------- 8. subagents continued


@pytest.mark.heavy  # ~5-12 s: in make test-heavy, to keep make test in its budget
def test_subagents_are_continued_by_message_and_by_resume_with_claude_codes_results(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed synchronous subagent gives its partial answer; a named one is messaged after
    it ended (resumed from its sidechain, its answer a <task-notification> with the call's
    id and usage) and resumed again with Agent {resume}."""
    define(root, "brief", "maxTurns: 1")
    seen: dict[str, Any] = {}

    def sub(request: dict[str, Any]) -> Reply:
        first, said = text_of(request["messages"][0]["content"]), last_user_text(request)
        if "try hard" in first:
            return message(
                [
                    {"type": "text", "text": "partial so far"},
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "echo hi"}},
                ],
                stop_reason="tool_use",
            )
        if "final?" in said:
            return text("Final.")
        if "now count again" in said:
            seen["resumed"] = request
            return text("Counted 4.")
        return text("Counted 3.")

    def script(request: dict[str, Any], n: int) -> Reply:
        if "You are a subagent" in text_of(request["system"]):
            return sub(request)
        ids, said = tool_result_ids(request), last_user_text(request)
        if ids:
            seen[ids[0]] = request["messages"][-1]["content"][0]
        if ids == ["f1"]:
            return tool_uses(
                ("s1", "Agent", {"description": "count", "prompt": "count files", "name": "counter"})
            )
        if ids == ["s1"]:
            note = {
                "type": "message",
                "recipient": "counter",
                "content": "now count again",
                "summary": "again",
            }
            return tool_uses(("m1", "SendMessage", note))
        if ids == ["r1"]:
            return tool_uses(("done", "TaskUpdate", {"taskId": "1", "status": "completed"}))
        if ids:
            return text("Waiting." if ids == ["m1"] else "Finished.")
        if "<task-notification>" in said:
            seen["notification"] = said
            agent_id = said.split("<task-id>")[1].split("<")[0]
            return tool_uses(
                ("r1", "Agent", {"description": "again", "prompt": "final?", "resume": agent_id})
            )
        if "Start with task #1" in said:
            return tool_uses(
                ("f1", "Agent", {"description": "hard", "prompt": "try hard", "subagent_type": "brief"})
            )
        return text("Ready.")

    with serve(script, monkeypatch), running_team(root) as team:
        team.spawn("ada", prompt="hello", model=LEAD_MODEL)
        task = team.tasks.create("Count")
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=60)
    failed = seen["f1"]
    assert failed.get("is_error") and "Its partial result:\npartial so far" in failed["content"]
    counted = seen["s1"]["content"]
    assert (
        counted.startswith("Counted 3.\n\nagentId: sub-")
        and "<usage>total_tokens: 15\ntool_uses: 0" in counted
    )
    agent_id = counted.split("agentId: ")[1].split(" ")[0]
    assert "resumed in the background" in seen["m1"]["content"]
    assert "Counted 3." in json.dumps(seen["resumed"]["messages"])  # it went on from its sidechain
    note = seen["notification"]
    assert f"<task-id>{agent_id}</task-id>" in note and "<tool-use-id>m1</tool-use-id>" in note
    assert "<result>Counted 4.</result>" in note and "<usage>total_tokens: 30" in note
    assert seen["r1"]["content"].startswith(f"Final.\n\nagentId: {agent_id}")


def test_a_message_to_a_running_subagent_is_its_next_turn(tmp_path: Path) -> None:
    paths = TeamPaths(tmp_path, "t")
    subagents_file.write(paths, SubagentResult(id="sub-1", parent="ada", name="counter"))
    assert (
        subagents_file.find(paths, "ada", "counter") is not None
        and subagents_file.find(paths, "bob", "counter") is None
    )
    assert subagents_file.queue(paths, "sub-1", "and the tests too")
    assert subagents_file.take_or_finish(paths, "sub-1", result="x", tokens=1, tool_uses=0) == [
        "and the tests too"
    ]
    assert subagents_file.read(paths, "sub-1").status == "running"
    assert subagents_file.take_or_finish(paths, "sub-1", result="done", tokens=1, tool_uses=0) == []
    assert subagents_file.read(paths, "sub-1").status == "completed"
    assert not subagents_file.queue(paths, "sub-1", "too late: it is resumed instead")
