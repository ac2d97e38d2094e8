"""The anthropic:MODEL backend with the real SDK against a local Messages API server."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from ipc.schemas import IdleNotification, parse_body
from tests.fake_anthropic import (
    FakeAnthropic,
    Reply,
    error,
    last_user_text,
    text,
    text_of,
    tool_result_ids,
    tool_uses,
)
from tests.runtime_helpers import running_team, wait_for


@pytest.fixture(autouse=True)
def _api_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("AGENTTEAMS_API_RETRIES", "2")


def idle_notifications(team: Any) -> list[IdleNotification]:
    return [
        b for m in team.inbox("team-lead").history() if isinstance(b := parse_body(m.text), IdleNotification)
    ]


def task_script(out_file: Path) -> Any:
    def script(request: dict[str, Any], n: int) -> Reply:
        results = tool_result_ids(request)
        if results == ["toolu_1"]:
            return tool_uses(
                ("toolu_2", "TaskUpdate", {"taskId": "1", "status": "completed"}),
                (
                    "toolu_3",
                    "SendMessage",
                    {
                        "type": "message",
                        "recipient": "team-lead",
                        "content": "wrote the file",
                        "summary": "done",
                    },
                ),
            )
        if results:
            return text("Finished.")
        if "Start with task #1" in last_user_text(request):
            return tool_uses(
                ("toolu_1", "Bash", {"command": f"echo hello > {out_file}", "description": "write"})
            )
        return text("Ready.")

    return script


def test_a_teammate_claims_calls_tools_with_proper_pairing_and_completes(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out_file = root / "out.txt"
    with FakeAnthropic(task_script(out_file)) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        with running_team(root) as team:
            team.spawn("ada", prompt="You write files.", model="anthropic:claude-test")
            task = team.tasks.create("Write the file", "echo hello into out.txt")
            team.wake("*")
            team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
            assert out_file.read_text() == "hello\n"
            wait_for(lambda: [m for m in team.inbox("team-lead").history() if m.text == "wrote the file"])
            first = api.requests[0]
            assert first["model"] == "claude-test"
            assert {t["name"] for t in first["tools"]} >= {
                "SendMessage",
                "TaskUpdate",
                "Bash",
                "Read",
                "ExitPlanMode",
            }
            assert all("input_schema" in t for t in first["tools"])
            assert '<teammate-message teammate_id="team-lead"' in text_of(first["messages"][0]["content"])
            assert "You write files." in text_of(first["messages"][0]["content"])
            assert "ada" in text_of(first["system"]) and "team 't'" in text_of(first["system"])
            # Pairing: each tool_result answers the tool_use of the assistant message just before it.
            for request in api.requests:
                messages = request["messages"]
                for i, m in enumerate(messages):
                    ids = (
                        [
                            b["tool_use_id"]
                            for b in m["content"]
                            if isinstance(m["content"], list) and b.get("type") == "tool_result"
                        ]
                        if m["role"] == "user"
                        else []
                    )
                    if ids:
                        uses = [b["id"] for b in messages[i - 1]["content"] if b.get("type") == "tool_use"]
                        assert ids == uses
            third = wait_for(  # sent after SendMessage ran: the lead may hear before it goes out
                lambda: next((r for r in api.requests if tool_result_ids(r) == ["toolu_2", "toolu_3"]), None)
            )
            results = third["messages"][-1]["content"]
            assert json.loads(results[0]["content"])["success"] is True and "is_error" not in results[0]


def test_transcript_resumes_after_a_crash(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out_file = root / "out.txt"
    with FakeAnthropic(task_script(out_file)) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        with running_team(root) as team:
            team.spawn("ada", prompt="You write files.", model="anthropic:claude-test")
            task = team.tasks.create("Write the file")
            team.wake("*")
            team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
            pid = team.status().teammates[0].pid or 0
            os.kill(pid, signal.SIGKILL)
            wait_for(
                lambda: (m := team.status().teammates[0]).pid not in (None, pid) and m.state == "idle",
                timeout=20,
            )
            before = len(api.requests)
            team.send("ada", "Are you still there?", summary="ping")
            wait_for(lambda: len(api.requests) > before, timeout=20)
            resumed = api.requests[before]["messages"]
            assert any("Start with task #1" in str(m["content"]) for m in resumed), (
                "the old conversation was not restored"
            )
            assert "Are you still there?" in str(resumed[-1]["content"])
            transcript = root / "teams" / "t" / "transcripts" / "ada.jsonl"
            assert transcript.exists() and "toolu_1" in transcript.read_text()


def test_a_429_is_retried_and_the_turn_succeeds(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def script(request: dict[str, Any], n: int) -> Reply:
        return error(429, "rate_limit_error") if n == 1 else text("Ready.")

    with FakeAnthropic(script) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        with running_team(root) as team:
            team.spawn("ada", prompt="hello", model="anthropic:claude-test")
            notes = wait_for(lambda: idle_notifications(team), timeout=20)
            assert notes[0].idle_reason == "available"
            assert len(api.requests) == 2


def test_a_persistent_500_ends_the_turn_with_a_failed_idle_notification(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAnthropic(lambda request, n: error(500, "api_error")) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        with running_team(root) as team:
            team.spawn("ada", prompt="hello", model="anthropic:claude-test")
            notes = wait_for(lambda: idle_notifications(team), timeout=30)
            assert notes[0].idle_reason == "failed"
            assert isinstance(notes[0].failure_reason, str) and "500" in notes[0].failure_reason
            assert len(api.requests) == 3  # the first try and two retries
            wait_for(lambda: team.status().teammates[0].state == "idle")  # failed turn, live teammate
