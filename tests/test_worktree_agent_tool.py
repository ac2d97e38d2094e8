"""The lead's ``Agent`` tool with ``isolation: "worktree"`` (Claude Code's spelling): the
teammate it spawns works in its own git worktree of the team's repository, on its own
branch; for a subagent the same field is refused in one line. In ``make test-heavy``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from supervisor import Team
from tests.agent_helpers import LEAD_MODEL, results, serve
from tests.fake_anthropic import Reply, last_user_text, text, tool_uses
from tests.runtime_helpers import git, git_repo


@pytest.mark.heavy  # a lead agent, its supervisor and a teammate: seconds, beyond make test's budget
@pytest.mark.usefixtures("fake_api_env")
def test_the_agent_tools_worktree_isolation_gives_the_teammate_its_own_worktree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = git_repo(tmp_path / "project", {"a.txt": "a\n"})
    answers: dict[str, tuple[Any, bool]] = {}

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

    root = tmp_path / "root"
    with serve(script, monkeypatch):
        team = Team.create("t", root=root, cwd=str(repo))
        try:
            team.lead("GOAL: spawn wt.", model=LEAD_MODEL, timeout=60)
            member = team.config().member("wt")
            assert member is not None, answers
            worktree = Path(member.cwd)
            assert worktree != repo and (worktree / "a.txt").read_text() == "a\n"
            assert git(worktree, "rev-parse", "--abbrev-ref", "HEAD").strip() == "agentteams/t/wt"
            assert not answers["s1"][1], answers["s1"]
            assert answers["s2"][1] and "isolation 'worktree' is for teammates" in answers["s2"][0]
        finally:
            team.down()
