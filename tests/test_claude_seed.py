"""A claude teammate's first-run answers (onboarding, trust, the API key accepted) are
written only into a root agentteams owns, never into the user's own Claude Code home:
``~/.claude`` or their ``$CLAUDE_CONFIG_DIR``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentproc.claude_teammate import seed_config


def test_a_root_of_our_own_is_seeded_and_the_users_config_dir_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = tmp_path / "ours"
    ours.mkdir()
    seed_config(ours, "/work", {"ANTHROPIC_API_KEY": "sk-test-0123456789abcdefghij"})
    seeded = json.loads((ours / ".claude.json").read_text())
    assert seeded["bypassPermissionsModeAccepted"] is True
    assert seeded["projects"]["/work"]["hasTrustDialogAccepted"] is True

    theirs = tmp_path / "myconf"
    theirs.mkdir()
    (theirs / ".claude.json").write_text('{"theme": "light"}')
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(theirs))
    seed_config(theirs, "/work", {"ANTHROPIC_API_KEY": "sk-test-0123456789abcdefghij"})
    assert (theirs / ".claude.json").read_text() == '{"theme": "light"}'
    assert sorted(p.name for p in theirs.iterdir()) == [".claude.json"]  # no lock left either
