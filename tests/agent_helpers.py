"""Set-up the agent tests share, written once: an agent's launch spec, agents on the fake
Messages API (:mod:`tests.fake_anthropic`), agent definitions where Claude Code reads them,
and the tool results a request carries. The environment they want is two fixtures of
``conftest``: ``fake_api_env`` (a key, no retries) and ``own_home`` (a home of the test's own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ipc.launch import LaunchSpec
from tests.fake_anthropic import FakeAnthropic, Script, last_user_content

LEAD_MODEL = "anthropic:claude-test"  # a model of the anthropic brain, answered by the fake API


def launch_spec(root: Path, team: str = "t", name: str = "a", **fields: Any) -> LaunchSpec:
    """The flags an agent ``name`` of ``team`` under ``root`` (also its cwd) starts with."""
    given: dict[str, Any] = {"agent_color": "blue", "parent_session_id": "s", "cwd": str(root), **fields}
    return LaunchSpec(agent_id=f"{name}@{team}", agent_name=name, team_name=team, root=str(root), **given)


def serve(script: Script, monkeypatch: pytest.MonkeyPatch, **options: Any) -> FakeAnthropic:
    """The fake Messages API answering by ``script``, and agents started after pointed at it:
    ``with serve(script, monkeypatch) as api: ...``."""
    api = FakeAnthropic(script, **options)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    return api


def results(request: dict[str, Any]) -> dict[str, tuple[Any, bool]]:
    """The tool results of the request's last user message: id -> (content, is_error)."""
    content = last_user_content(request)
    if not isinstance(content, list):
        return {}
    return {
        b["tool_use_id"]: (b["content"], bool(b.get("is_error")))
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    }


def strip(value: Any) -> Any:
    """A request part without its cache breakpoints (they move from request to request)."""
    if isinstance(value, list):
        return [strip(v) for v in value]
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k != "cache_control"}
    return value


def write_definition(folder: Path, name: str, front: str, body: str = "You help.") -> Path:
    """An agent definition ``folder/name.md``: ``name`` and the ``front`` lines in its front
    matter, ``body`` its prompt."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(f"---\nname: {name}\n{front}\n---\n{body}\n")
    return path


def define(cwd: Path, name: str, front: str, body: str = "You help.") -> Path:
    """An agent definition of the project at ``cwd`` (its ``.claude/agents``)."""
    return write_definition(cwd / ".claude" / "agents", name, front, body)


def secret_outside(tmp_path: Path) -> Path:
    """A folder outside the project with ``secret.txt`` ("from outside") in it: an agent in
    the project must ask before it reads it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("from outside\n")
    return outside
