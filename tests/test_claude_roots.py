"""What agentteams makes of a Claude Code root: a claude teammate's first-run answers
(onboarding, trust, the API key accepted) go only into a root agentteams owns, never into
the user's own home (``~/.claude`` or their ``$CLAUDE_CONFIG_DIR``); a team's recorded lead
session is live only while its own process runs."""

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


def test_a_recorded_lead_is_live_only_while_its_own_process_runs() -> None:
    import os
    import subprocess

    from ipc import cc_registry
    from ipc.schemas import LeadProcess
    from supervisor.client.ps_claude import lead_alive

    here = "vm#" + os.readlink("/proc/self/ns/pid")  # as 2.1.330 writes it
    me = LeadProcess(pid=os.getpid(), pid_space=here, proc_start=cc_registry.proc_start(os.getpid()))
    assert lead_alive(me) is True
    # Its pid taken over by another process (started at another time): not the lead.
    assert lead_alive(LeadProcess(pid=1, pid_space=here, proc_start="-1")) is False
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert lead_alive(LeadProcess(pid=gone.pid, pid_space=here)) is False
    # Recorded in another pid namespace: its pid says nothing here.
    assert lead_alive(LeadProcess(pid=os.getpid(), pid_space="vm#pid:[1]")) is None
