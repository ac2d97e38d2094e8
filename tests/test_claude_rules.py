"""Claude Code's ``.claude/rules/``: the user's and the project's rule files beside CLAUDE.md,
unconditional ones as instructions, ones with ``paths:`` listed by path with their globs."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentproc.models.prompts import system_prompt
from ipc.agents import resolve
from ipc.claude_md import CONDITIONAL, memory_files
from ipc.launch import LaunchSpec


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "userhome"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def prompt_of(cwd: Path, root: Path) -> str:
    """The system prompt an API teammate working in ``cwd`` is given."""
    spec = LaunchSpec(
        agent_id="ada@t",
        agent_name="ada",
        team_name="t",
        agent_color="blue",
        parent_session_id="s",
        root=str(root),
        cwd=str(cwd),
    )
    return system_prompt(spec, resolve("general-purpose", cwd))


def test_rules_are_read_beside_claude_md_and_conditional_ones_are_listed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    user = Path.home() / ".claude"
    write(user / "CLAUDE.md", "User memory.")
    write(user / "rules" / "tone.md", "User rule: be brief.")
    write(project / "CLAUDE.md", "Project memory.")
    write(project / ".claude" / "CLAUDE.md", "Dot-claude memory.")
    write(project / ".claude" / "rules" / "a-testing.md", "Run the tests with make test.\n@extra.md")
    write(project / ".claude" / "rules" / "extra.md.txt", "not a rule")
    write(project / ".claude" / "rules" / "extra.md", "Imported or not, said once.")
    write(
        project / ".claude" / "rules" / "frontend" / "style.md",
        "---\ndescription: style\n---\nUse tabs in the frontend.",
    )
    api = write(
        project / ".claude" / "rules" / "api.md",
        '---\npaths:\n  - "src/api/**/*.ts"\n  - "lib/**"\n---\nValidate every request body.',
    )
    docs = write(
        project / ".claude" / "rules" / "docs.md", "---\npaths: docs/**/*.md, *.rst\n---\nWrap at 80."
    )
    write(project / "CLAUDE.local.md", "Local memory.")
    system = prompt_of(project, tmp_path / "root")
    order = [
        "User memory.",
        "User rule: be brief.",
        "Project memory.",
        "Dot-claude memory.",
        "Run the tests with make test.",
        "Imported or not, said once.",
        "Use tabs in the frontend.",
        "Local memory.",
    ]
    assert [system.index(s) for s in order] == sorted(system.index(s) for s in order)
    assert system.count("Imported or not, said once.") == 1  # imported, and a rule: read once
    assert "not a rule" not in system and "description: style" not in system
    rule = project / ".claude" / "rules" / "a-testing.md"
    assert f"Contents of {rule} (project instructions, checked into the codebase)" in system
    assert "(user's private global instructions for all projects)" in system
    # A rule for some files only: not its text, one line naming it and its globs.
    assert "Validate every request body." not in system and "Wrap at 80." not in system
    listed = system[system.index(CONDITIONAL) :].splitlines()[1:3]
    assert listed == [f"- {api}: src/api/**/*.ts, lib/**", f"- {docs}: docs/**/*.md, *.rst"]


def test_a_rule_whose_frontmatter_cannot_be_read_applies_everywhere(tmp_path: Path) -> None:
    write(tmp_path / ".claude" / "rules" / "odd.md", "---\npaths: [unclosed\n---\nKeep the changelog.")
    write(tmp_path / ".claude" / "rules" / "bad.md", "---\npaths: 3\n---\nNo secrets in logs.")
    texts = {m.path.name: m for m in memory_files(tmp_path)}
    assert "Keep the changelog." in texts["odd.md"].text and not texts["odd.md"].paths
    assert texts["bad.md"].text == "No secrets in logs." and not texts["bad.md"].paths
    below = tmp_path / "src" / "deep"
    below.mkdir(parents=True)
    assert [m.path.name for m in memory_files(below)] == ["bad.md", "odd.md"]  # a parent's rules too
