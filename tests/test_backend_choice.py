"""Where a spawn runs, decided before anything is written: a claude-code model runs the real
``claude`` in its hidden terminal, or in a tmux pane when the spawn or the team asks for
tmux (then the member reads as Claude Code writes a pane teammate: ``backendType`` tmux,
its model saying it is Claude Code)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipc import TeamConfigStore
from ipc.launch import SupervisorOptions, TeammateMode
from ipc.messaging import _is_claude
from ipc.options import SpawnBackend, TeammateOptions
from ipc.schemas import Member
from supervisor.daemon.specs import TeamContext, check_spawn


def choose(root: Path, mode: TeammateMode, model: str, backend: SpawnBackend = "") -> tuple[str, str]:
    context = TeamContext(
        team="t",
        root=root,
        session="s",
        options=SupervisorOptions(teammate_mode=mode, tmux_server="x"),
        supervisor_pid=1,
    )
    store = TeamConfigStore(root, "t")
    if not store.path.exists():
        store.create("", cwd=str(root))
    options, _ = check_spawn(context, store.read(), TeammateOptions(name="cc", model=model, backend=backend))
    return options.backend, options.model


@pytest.fixture(autouse=True)
def claude_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\n")
    monkeypatch.setenv("AGENTTEAMS_CLAUDE_BIN", str(fake))


def test_a_claude_code_model_runs_hidden_unless_tmux_is_asked_for(root: Path) -> None:
    assert choose(root, "process", model="claude-code") == ("claude-code", "sonnet")
    assert choose(root, "in-process", model="claude-code:opus") == ("claude-code", "claude-code:opus")
    assert choose(root, "process", model="claude-code", backend="tmux") == ("tmux", "claude-code:sonnet")
    assert choose(root, "tmux", model="claude-code:haiku") == ("tmux", "claude-code:haiku")
    assert choose(root, "tmux", model="offline") == ("tmux", "offline")  # our own agent in a pane


def test_messages_for_a_claude_teammate_in_a_pane_go_its_way() -> None:
    def member(backend: str, model: str) -> Member:
        return Member(agent_id="cc@t", name="cc", backend_type=backend, model=model)

    assert _is_claude(member("tmux", "claude-code:sonnet")) and _is_claude(member("claude-code", "sonnet"))
    assert not _is_claude(member("tmux", "offline")) and not _is_claude(member("in-process", "sonnet"))
