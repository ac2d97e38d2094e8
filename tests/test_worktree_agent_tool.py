"""The lead's ``Agent`` tool with ``isolation: "worktree"`` (Claude Code's spelling): the
teammate it spawns works in its own git worktree of the team's repository, on its own
branch; for a subagent the same field is refused in one line. In ``make test-heavy``."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from supervisor import Team
from tests.fake_anthropic import FakeAnthropic, Reply, last_user_content, last_user_text, text, tool_uses


def git(cwd: Path, *args: str) -> str:
    env_args = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    return subprocess.run(
        ["git", *env_args, "-C", str(cwd), *args], check=True, capture_output=True, text=True
    ).stdout


def results(request: dict[str, Any]) -> dict[str, tuple[str, bool]]:
    content = last_user_content(request)
    if not isinstance(content, list):
        return {}
    return {
        b["tool_use_id"]: (str(b["content"]), bool(b.get("is_error"))) for b in content if "tool_use_id" in b
    }


@pytest.mark.heavy  # a lead agent, its supervisor and a teammate: seconds, beyond make test's budget
def test_the_agent_tools_worktree_isolation_gives_the_teammate_its_own_worktree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    answers: dict[str, tuple[str, bool]] = {}

    def script(request: dict[str, Any], n: int) -> Reply:
        if "You are team-lead" not in str(request.get("system", "")):
            return text("idle")  # the teammate
        done = results(request)
        answers.update(done)
        if "GOAL" in last_user_text(request):
            return tool_uses(
                (
                    "s1",
                    "Agent",
                    {"name": "wt", "prompt": "Wait.", "description": "w", "isolation": "worktree"},
                ),
                ("s2", "Agent", {"prompt": "Look.", "description": "helper", "isolation": "worktree"}),
            )
        return text("Spawned.")

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("AGENTTEAMS_API_RETRIES", "0")
    root = tmp_path / "root"
    with FakeAnthropic(script) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        team = Team.create("t", root=root, cwd=str(repo))
        try:
            team.lead("GOAL: spawn wt.", model="anthropic:claude-test", timeout=60)
            member = team.config().member("wt")
            assert member is not None, answers
            worktree = Path(member.cwd)
            assert worktree != repo and (worktree / "a.txt").read_text() == "a\n"
            assert git(worktree, "rev-parse", "--abbrev-ref", "HEAD").strip() == "agentteams/t/wt"
            assert not answers["s1"][1], answers["s1"]
            assert answers["s2"][1] and "isolation 'worktree' is for teammates" in answers["s2"][0]
        finally:
            team.down()
