"""The kinds of subagent beyond the named one, driven by the real `anthropic` SDK against the
local Messages API server that simulates the prompt cache: fork workers (the parent's
conversation, tools and model; billed as a cache read of the parent's prefix; never forking
again), permissions that bubble up to the parent, and a synchronous subagent moved to the
background while it works."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from supervisor import Team
from tests.fake_anthropic import (
    FakeAnthropic,
    PromptCache,
    Reply,
    last_user_content,
    last_user_text,
    text,
    tool_uses,
)
from tests.runtime_helpers import nothing_left_under

LEAD_MODEL = "anthropic:claude-test"
# Each test starts a lead and subagents that import the SDK: several seconds on a loaded machine.
pytestmark = pytest.mark.heavy


@pytest.fixture(autouse=True)
def _api_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("AGENTTEAMS_API_RETRIES", "0")


class Billed:
    """The simulated prompt cache, keeping each request's usage beside it."""

    def __init__(self) -> None:
        self.cache = PromptCache()
        self.seen: list[tuple[dict[str, Any], dict[str, int]]] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, int]:
        usage = self.cache(request)
        self.seen.append((request, usage))
        return usage


def results(request: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    content = last_user_content(request)
    if not isinstance(content, list):
        return {}
    return {
        b["tool_use_id"]: (b["content"], bool(b.get("is_error")))
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    }


def is_fork(request: dict[str, Any]) -> bool:
    return "<fork-boilerplate>" in json.dumps(request.get("messages", []))


def strip(value: Any) -> Any:
    """A request part without its cache breakpoints (they move from request to request)."""
    if isinstance(value, list):
        return [strip(v) for v in value]
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k != "cache_control"}
    return value


def test_a_fork_shares_its_parents_prefix_reads_it_from_the_cache_and_cannot_fork_again(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def script(request: dict[str, Any], n: int) -> Reply:
        done, turn = results(request), last_user_text(request)
        if is_fork(request):
            if "again" in done:
                seen["again"] = done["again"]
                return text("fork: 42 files")
            return tool_uses(("again", "Agent", {"description": "deeper", "prompt": "Fork once more."}))
        if "GOAL" in turn and not done:
            return tool_uses(("f1", "Agent", {"description": "count", "prompt": "Count the files."}))
        if "f1" in done:
            seen["launched"] = json.loads(done["f1"][0])
            return text("A fork counts them.")
        if "<task-notification>" in turn:
            seen["notification"] = turn
            return text("Counted.")
        return text("?")

    billed = Billed()
    with FakeAnthropic(script, usage=billed) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        team = Team.create("t", root=root, cwd=str(root))
        result = team.lead("GOAL: count the files.", model=LEAD_MODEL, timeout=60, fork_subagents=True)
    assert result.stopped_by == "done", result
    assert seen["launched"]["status"] == "async_launched"
    fork_id = seen["launched"]["agentId"]
    assert "<status>completed</status>" in seen["notification"] and "fork: 42 files" in seen["notification"]
    # A fork inside a fork is refused, and says why.
    refusal, is_error = seen["again"]
    assert is_error and "cannot fork again" in refusal
    # The fork's first request is the lead's first request, then the lead's call and the
    # placeholder answer with the directive: same system prompt, tools and model...
    (first, first_usage), *rest = billed.seen
    fork_request, fork_usage = next((r, u) for r, u in rest if is_fork(r))
    assert strip(fork_request["system"]) == strip(first["system"])
    assert strip(fork_request["tools"]) == strip(first["tools"])
    assert fork_request["model"] == first["model"]
    assert strip(fork_request["messages"][:1]) == strip(first["messages"])
    call = fork_request["messages"][1]
    assert call["role"] == "assistant" and call["content"][0]["id"] == "f1"
    # ... so it reads from the cache all that the lead's first request wrote there.
    assert first_usage["cache_creation_input_tokens"] > 0
    assert fork_usage["cache_read_input_tokens"] == first_usage["cache_creation_input_tokens"]
    record = json.loads(team.paths.subagent_result(fork_id).read_text())
    assert record["fork"] is True and record["status"] == "completed"
    nothing_left_under(root)
