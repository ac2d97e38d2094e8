"""Stopping is prompt when nothing refuses it: what `down` waits for, and what it does not.
(How long each stop takes is measured by `agentteams bench teardown`, not asserted here.)"""

from __future__ import annotations

import json
from pathlib import Path

from supervisor import Team
from tests.runtime_helpers import cli, team_pids, wait_for, wait_for_gone


def test_down_does_not_wait_for_an_exited_supervisor_to_be_reaped(root: Path) -> None:
    # This process started the supervisor and does not reap it: once it exits it is a zombie
    # until we wait for it. `down` from another process must see it gone all the same.
    team = Team.create("t", root=root, cwd=str(root))
    team.up()
    try:
        out = cli(root, "down", "t", "--json", timeout=20)  # it waited 30 s, then killed
        assert json.loads(out.stdout)["stopped"] is True
    finally:
        if team._proc is not None:
            team._proc.wait(10)


def test_down_stops_a_busy_teammate_at_once_not_after_the_grace(root: Path) -> None:
    cli(root, "team", "create", "t")
    cli(root, "up", "t")
    team = Team("t", root)
    cli(root, "spawn", "t", "alice", "--prompt", "p")
    cli(root, "spawn", "t", "bob", "--prompt", "p")
    cli(root, "task", "create", "t", "Wait", "--command", "sleep 120")
    wait_for(lambda: any(m.children for m in team.ps().teammates), timeout=30)
    pids = set(team_pids(team))
    cli(root, "down", "t", "--grace", "60", timeout=30)  # a command cannot answer; it is stopped
    assert wait_for_gone(pids) == []
    task = json.loads(cli(root, "task", "get", "t", "1", "--json").stdout)
    assert task["status"] == "pending" and "owner" not in task  # given back, to run again on up
    assert sorted(m.name for m in team.config().teammates()) == ["alice", "bob"]  # members stay
