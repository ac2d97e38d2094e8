"""A teammate and its subagents: what its background subagents came to reaches it once
across its restart (from their records: its memory of them went with it), and its token
budget covers their usage with its own."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from ipc import subagents
from ipc.budget_check import over_budget
from ipc.options import SubagentOptions
from ipc.paths import TeamPaths
from ipc.replies import SubagentResult
from ipc.schemas import IdleNotification, parse_body
from ipc.usage import Limit, Tokens, UsageBook, set_budget, team_usage
from supervisor import Team
from tests.agent_helpers import results, serve
from tests.fake_anthropic import Reply, text, text_of, tool_uses
from tests.runtime_helpers import running_team, wait_for


def lead_said(team: Team) -> list[str]:
    return [m.text for m in team.inbox("team-lead").history()]


def gated(root: Path, gate: str, said: str) -> str:
    """A command that works until the test makes file ``gate``, then says ``said``."""
    return f"while [ ! -e {root}/{gate} ]; do sleep 0.1; done; echo {said}"


def test_a_restarted_teammate_is_told_once_of_each_background_subagent_it_had_not_heard_from(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ada's two subagents go to the background (the offline rule, at their first check-in)
    and ada goes on to a long task. One finishes while ada is busy; then ada is killed with
    -9, and the other, still running, dies with it. The restarted ada hears of both: the
    first's answer completes its task (not run again), the second's end gives its task back
    as failed."""
    monkeypatch.setenv("AGENTTEAMS_SUBAGENT_CHECK_IN", "0.5")
    with running_team(root) as team:
        team.spawn("ada")
        wait_for(lambda: team.status().teammates[0].state == "idle", timeout=20)
        done = team.tasks.create(
            "Done helper",
            metadata={"subagent": f"Background: `echo run >> {root}/runs; {gated(root, 'a', 'late')}`"},
        )
        team.wake("*")
        wait_for(lambda: team.tasks.get(done.id).meta.get("backgroundAgent"), timeout=30)
        killed = team.tasks.create(
            "Killed helper", metadata={"subagent": f"Background: `{gated(root, 'b', 'x')}`"}
        )
        team.wake("*")
        wait_for(lambda: team.tasks.get(killed.id).meta.get("backgroundAgent"), timeout=30)
        team.tasks.create("Busy", metadata={"command": f"touch {root}/busy; {gated(root, 'c', 'ok')}"})
        team.wake("*")
        wait_for(lambda: (root / "busy").exists(), timeout=30)
        first = str(team.tasks.get(done.id).meta["backgroundAgent"])
        second = str(team.tasks.get(killed.id).meta["backgroundAgent"])
        (root / "a").touch()
        wait_for(lambda: subagents.read(team.paths, first).status == "completed", timeout=20)
        assert not subagents.read(team.paths, first).notified  # ada is busy: not handed over yet

        pid = team.status().teammates[0].pid or 0
        os.kill(pid, signal.SIGKILL)
        (root / "c").touch()  # the busy task, if it comes back, ends at once
        wait_for(lambda: team.status().teammates[0].pid not in (None, pid), timeout=30)

        completed = f"Completed task #{done.id}: Done helper\nlate"
        wait_for(lambda: completed in "\n".join(lead_said(team)), timeout=30)
        failed = f"Task #{killed.id} (Killed helper) failed:\nits subagent killed"
        wait_for(lambda: any(t.startswith(failed) for t in lead_said(team)), timeout=30)
        assert team.tasks.get(done.id).status == "completed" and (root / "runs").read_text() == "run\n"
        assert subagents.read(team.paths, first).notified and subagents.read(team.paths, second).notified
        (root / "b").touch()  # the killed task, given back, may be run again: let it end
        # Once: the record says so, and a wake brings no second notification.
        team.wake("ada")
        wait_for(lambda: team.status().teammates[0].state == "idle", timeout=30)
        assert sum(completed in t for t in lead_said(team)) == 1
        assert sum(t.startswith(failed) for t in lead_said(team)) == 1
        records = [json.loads(p.read_bytes()) for p in (team.paths.team_dir / "subagents").glob("sub-*.json")]
        assert {r["id"] for r in records} >= {first, second}


def test_unreported_subagents_are_a_parents_own_not_yet_told_since_it_joined(tmp_path: Path) -> None:
    paths = TeamPaths(tmp_path, "t")
    paths.team_dir.mkdir(parents=True)
    for record in (
        SubagentResult(id="sub-1", parent="ada", status="completed", started_ms=200),
        SubagentResult(id="sub-2", parent="ada", status="killed", started_ms=200, notified=True),
        SubagentResult(id="sub-3", parent="ada", started_ms=200),  # running: told when it ends
        SubagentResult(id="sub-4", parent="bob", status="completed", started_ms=200),
        SubagentResult(id="sub-5", parent="ada", status="failed", started_ms=50),  # an earlier ada's
    ):
        subagents.write(paths, record)
    assert subagents.unreported_of(paths, "ada", since_ms=100) == ["sub-1", "sub-3"]
    ended = subagents.read(paths, "sub-1")
    subagents.begin(paths, ended, "sub-1", SubagentOptions(parent="ada", prompt="again"))
    subagents.mark_notified(paths, ended)  # the run it reports is over: the resumed one is not told
    assert not subagents.read(paths, "sub-1").notified


def spend(paths: TeamPaths, agent: str, tokens: int) -> None:
    UsageBook(paths, agent).record("claude-test", Tokens(input=tokens, requests=1))


def test_a_teammates_budget_counts_its_subagents_and_theirs_and_stops_them_too(tmp_path: Path) -> None:
    paths = TeamPaths(tmp_path, "t")
    paths.team_dir.mkdir(parents=True)
    subagents.write(paths, SubagentResult(id="sub-0a1b2c3d", parent="ada"))
    subagents.write(paths, SubagentResult(id="sub-11112222", parent="sub-0a1b2c3d"))  # nested
    subagents.write(paths, SubagentResult(id="sub-33334444", parent="bob"))
    spend(paths, "ada", 400)
    spend(paths, "ada.sub-0a1b2c3d", 300)  # as a subagent's usage is recorded: {parent}.{id}
    spend(paths, "bob", 100)
    spend(paths, "bob.sub-33334444", 900)
    spend(paths, "carol-sub-deadbeef", 900)  # a teammate so named, no subagent: nobody's but its own
    set_budget(paths, "ada", Limit(tokens=1000))
    set_budget(paths, "carol", Limit(tokens=1000))
    assert over_budget(paths, "ada") == ""
    spend(paths, "sub-0a1b2c3d.sub-11112222", 300)
    said = "ada's token budget of 1,000 tokens is reached (1,000 used)"
    for agent in ("ada", "ada.sub-0a1b2c3d", "sub-0a1b2c3d.sub-11112222"):
        assert over_budget(paths, agent) == said
    for agent in ("bob", "bob.sub-33334444", "carol"):  # others' limits and usage are their own
        assert over_budget(paths, agent) == ""
    # What usage shows per agent is as it was: each subagent on its own line.
    shown = {row.agent: row.tokens.total for row in team_usage(paths).agents}
    assert (
        shown["ada"] == 400 and shown["ada-sub-0a1b2c3d"] == 300 and shown["sub-0a1b2c3d-sub-11112222"] == 300
    )


def test_a_subagent_stops_when_its_parents_budget_is_spent_and_so_does_its_parent(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ada (150 tokens) asks a synchronous subagent; every request costs 100. The subagent's
    first request brings ada's count to 200: its second is refused, it fails saying so, and
    ada's next request is refused as well."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("AGENTTEAMS_API_RETRIES", "0")
    seen: dict[str, Any] = {"subagent": 0}

    def script(request: dict[str, Any], n: int) -> Reply:
        done = results(request)
        if "You are a subagent" in text_of(request["system"]):
            seen["subagent"] += 1
            return text("helped") if "w" in done else tool_uses(("w", "Bash", {"command": "echo step"}))
        if "s1" in done:
            seen["s1"] = done["s1"]
            return text("ok")
        return tool_uses(
            ("s1", "Agent", {"description": "helper", "prompt": "Help.", "subagent_type": "general-purpose"})
        )

    billed = {"input_tokens": 100, "output_tokens": 0}
    with serve(script, monkeypatch, usage=lambda request: billed), running_team(root) as team:
        team.set_budget(150, teammate="ada", spawning=True)
        team.spawn("ada", prompt="Use a helper.", model="anthropic:claude-test")
        reason = "ada's token budget of 150 tokens is reached (200 used)"

        def failed() -> list[IdleNotification]:
            bodies = [parse_body(m.text) for m in team.inbox("team-lead").history() if m.from_ == "ada"]
            return [
                b for b in bodies if isinstance(b, IdleNotification) and reason in (b.failure_reason or "")
            ]

        wait_for(failed, timeout=30)
        (record,) = [
            json.loads(p.read_bytes()) for p in (team.paths.team_dir / "subagents").glob("sub-*.json")
        ]
        assert record["status"] == "failed" and reason in record["error"], record
        assert seen["subagent"] == 1 and "s1" not in seen  # ada's request after it was refused too
