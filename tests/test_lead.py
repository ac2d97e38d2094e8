"""The lead agent driven by the real `anthropic` SDK against a local Messages API
server with scripted turns, and the offline lead end to end: real supervisors, teammates,
subagents and files."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ipc import subagents
from ipc.config import TeamConfigStore
from ipc.schemas import PlanApprovalResponse, parse_body
from ipc.tasks import TaskList
from supervisor import Team
from supervisor.client.lead_runner import LeadRun
from tests.agent_helpers import LEAD_MODEL, results, secret_outside, serve
from tests.fake_anthropic import Reply, last_user_text, text, tool_uses
from tests.runtime_helpers import alive, cli, nothing_left_under, running_team, wait_for

pytestmark = pytest.mark.usefixtures("fake_api_env")


def turn_text(request: dict[str, Any]) -> str:
    return last_user_text(request)


def is_lead(request: dict[str, Any]) -> bool:
    return "You are team-lead" in str(request.get("system", ""))


def worker(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "description": f"teammate {name}",
        "name": name,
        "prompt": "Work the task list.",
        "model": "offline",
        **extra,
    }


def background(description: str, prompt: str) -> dict[str, Any]:
    """Agent tool input for an offline background subagent."""
    return {"description": description, "prompt": prompt, "run_in_background": True, "model": "offline"}


def wrap_up(root: Path, team: str, state: dict[str, Any], request: dict[str, Any]) -> Reply:
    """Once every task is completed: ask each teammate to leave, then, once the lead has been
    told of every departure in a turn (not only seen the config change), delete the team."""
    tasks = TaskList(root, team).list()
    members = TeamConfigStore(root, team).read().teammates()
    told = turn_text(request)
    left: set[str] = state.setdefault("left", set())
    left.update(
        name
        for name in state.get("asked", ())
        if f"[shutdown approved] {name}" in told or f"[teammate terminated] {name}" in told
    )
    if tasks and all(t.status == "completed" for t in tasks):
        if not members and left >= set(state.get("asked", ())):
            return tool_uses(("delete", "TeamDelete", {}))
        if not state.get("asked"):
            state["asked"] = [m.name for m in members]
            # 2.1.330's SendMessage spelling: {to, message: {type, reason}}
            return tool_uses(
                *[
                    (
                        f"bye-{m.name}",
                        "SendMessage",
                        {"to": m.name, "message": {"type": "shutdown_request", "reason": "done"}},
                    )
                    for m in members
                ]
            )
    return text("Noted; waiting for the team.")


def test_a_lead_model_runs_a_three_task_dag_with_two_teammates_to_the_end(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order = root / "order.txt"
    state: dict[str, Any] = {}

    def script(request: dict[str, Any], n: int) -> Reply:
        assert is_lead(request)
        done = results(request)
        if "GOAL" in turn_text(request):
            return tool_uses(
                *[
                    (
                        f"c{i}",
                        "TaskCreate",
                        {"subject": s, "description": s, "metadata": {"command": f"echo {s} >> {order}"}},
                    )
                    for i, s in enumerate("abc", 1)
                ]
            )
        if "c1" in done:
            return tool_uses(
                ("u1", "TaskUpdate", {"taskId": "2", "addBlockedBy": ["1"]}),
                ("u2", "TaskUpdate", {"taskId": "3", "addBlockedBy": ["2"]}),
                ("s1", "Agent", worker("alice")),
                (
                    "s2",
                    "Task",
                    worker("bob", team_name="t", subagent_type="general-purpose"),
                ),  # 2.1.38's name
            )
        if "delete" in done:
            assert not done["delete"][1], done
            return text("All three tasks are done.")
        if done:
            return text("The team is at work.")
        return wrap_up(root, "t", state, request)

    with serve(script, monkeypatch) as api:
        team = Team.create("t", root=root, cwd=str(root))
        result = team.lead("GOAL: a, then b, then c.", model=LEAD_MODEL, timeout=60, keep=False)
    assert result.stopped_by == "done", result
    assert result.answer == "All three tasks are done."
    assert order.read_text().split() == ["a", "b", "c"]  # in dependency order
    assert sorted(result.teammates) == ["alice", "bob"]
    assert [t["status"] for t in result.tasks] == ["completed"] * 3
    assert not team.store.exists() and not result.kept  # handed the team, the lead deleted it
    turns = [turn_text(r) for r in api.requests]
    assert any('<teammate-message teammate_id="alice"' in t and "Completed task #" in t for t in turns)
    assert any("[shutdown approved] bob" in t or "[teammate terminated] bob" in t for t in turns)
    nothing_left_under(root)


def test_a_lead_model_cannot_delete_a_team_it_was_not_handed(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused: list[str] = []
    state: dict[str, Any] = {}

    def script(request: dict[str, Any], n: int) -> Reply:
        done = results(request)
        if "GOAL" in turn_text(request):
            return tool_uses(
                ("c1", "TaskCreate", {"subject": "a", "description": "a", "metadata": {"command": "true"}}),
                ("s1", "Agent", worker("alice")),
            )
        if "delete" in done:
            refused.append(done["delete"][0])
            return text("The team stays.")
        return wrap_up(root, "t", state, request)

    with serve(script, monkeypatch):
        team = Team.create("t", root=root, cwd=str(root))
        result = team.lead("GOAL: a.", model=LEAD_MODEL, timeout=60)
    assert result.stopped_by == "done" and result.kept, result
    assert refused and "is not this lead's to delete (Team.lead was given keep=True)" in refused[0]
    assert team.store.exists() and [t.status for t in team.tasks.list()] == ["completed"]
    nothing_left_under(root)


def test_a_lead_stopped_by_the_budget_says_so_with_its_own_exit_code(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def script(request: dict[str, Any], n: int) -> Reply:
        return tool_uses((f"c{n}", "TaskCreate", {"subject": f"task {n}", "description": "x"}))

    with serve(script, monkeypatch):
        cli(root, "team", "create", "t")
        cli(root, "budget", "t", "--budget-tokens", "1")  # the first request spends it
        out = cli(root, "lead", "t", "--model", LEAD_MODEL, "--prompt", "GOAL", "--json", ok=None)
    assert out.returncode == 5, out.stderr
    assert json.loads(out.stdout)["stopped_by"] == "budget"
    nothing_left_under(root)


def test_the_lead_model_rejects_a_plan_once_with_feedback_then_approves_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = root / "planned.txt"
    seen: list[str] = []

    def script(request: dict[str, Any], n: int) -> Reply:
        turn = turn_text(request)
        if "GOAL" in turn:
            return tool_uses(
                (
                    "c1",
                    "TaskCreate",
                    {"subject": "Write it", "description": "x", "metadata": {"command": f"echo ok > {out}"}},
                ),
                ("s1", "Agent", worker("planner", mode="plan")),
            )
        if "[plan approval request]" in turn:
            request_id = re.search(r"request_id ([^\s)]+)\)", turn)
            assert request_id is not None
            seen.append(request_id[1])
            answer = {"type": "plan_approval_response", "recipient": "planner", "request_id": request_id[1]}
            if len(seen) == 1:
                return tool_uses(
                    (
                        "p1",
                        "SendMessage",
                        {**answer, "approve": False, "content": "Add a step that checks it."},
                    )
                )
            return tool_uses(("p2", "SendMessage", {**answer, "approve": True}))
        return text("ok")

    with serve(script, monkeypatch):
        team = Team.create("t", root=root, cwd=str(root))
        result = team.lead("GOAL: write it, with a plan first.", model=LEAD_MODEL, timeout=60)
    assert result.stopped_by == "done", result
    assert out.read_text() == "ok\n" and len(seen) == 2
    answers = [
        b
        for m in team.inbox("planner").history()
        if isinstance(b := parse_body(m.text), PlanApprovalResponse)
    ]
    assert [a.approved for a in answers] == [False, True]
    assert answers[0].feedback == "Add a step that checks it."
    assert not team.is_up()  # the supervisor the lead started is down again; the team stays
    nothing_left_under(root)


def test_a_permission_request_reaches_the_lead_as_a_turn_and_its_answer_unblocks_the_teammate(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = secret_outside(tmp_path)
    copied = root / "copied.txt"
    asked: list[str] = []

    def script(request: dict[str, Any], n: int) -> Reply:
        turn = turn_text(request)
        if "GOAL" in turn:
            command = f"cat {outside}/secret.txt > {copied}"
            return tool_uses(
                (
                    "c1",
                    "TaskCreate",
                    {"subject": "Copy it", "description": "x", "metadata": {"command": command}},
                ),
                ("s1", "Agent", worker("copier")),
            )
        if "[permission request]" in turn:
            answer = re.search(r"Allow with SendMessage (\{.*?\})", turn)
            assert answer is not None
            asked.append(turn)
            return tool_uses(("p1", "SendMessage", json.loads(answer[1])))
        return text("ok")

    with serve(script, monkeypatch):
        team = Team.create("t", root=root, cwd=str(root))
        result = team.lead("GOAL: copy the file in.", model=LEAD_MODEL, timeout=60)
    assert result.stopped_by == "done", result
    assert len(asked) == 1 and "copier asks to run Bash" in asked[0] and str(outside) in asked[0]
    assert copied.read_text() == "from outside\n"
    nothing_left_under(root)


def test_the_lead_ends_when_the_supervisor_dies_under_its_background_subagent(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its subagent died with the supervisor (kill -9), its record still "running": the lead
    # waited on it for good, and never looked whether the supervisor was there at all.
    def script(request: dict[str, Any], n: int) -> Reply:
        if "GOAL" in turn_text(request):
            return tool_uses(("a1", "Agent", background("slow", "`sleep 300`")))
        return text("It runs in the background.")

    with serve(script, monkeypatch) as api:
        team = Team.create("t", root=root, cwd=str(root))
        run = LeadRun(team, "GOAL: wait.", model=LEAD_MODEL, timeout=None, interactive=False, verbose=False)
        try:
            wait_for(lambda: len(api.requests) >= 2, timeout=30)  # the Agent call has returned
            assert subagents.running_of(team.paths, "team-lead", set())
            supervisor = team.supervisor_pid()
            assert supervisor is not None
            os.kill(supervisor, signal.SIGKILL)
            ended = wait_for(lambda: not run.running(), timeout=30)
        finally:
            if run.running():
                run.proc.kill()
            run.wait()
    assert ended
    nothing_left_under(root)
    # Its record said "running" for good: a second lead waited on it, and `background`
    # offered to move it. The next supervisor records it killed.
    (slow,) = subagents.running_of(team.paths, "team-lead", set())
    team.up()
    try:
        record = subagents.read(team.paths, slow)
        assert (record.status, record.error) == ("killed", "its supervisor ended before it did")
    finally:
        team.down()


def test_sync_and_background_subagents_task_output_and_task_stop(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def script(request: dict[str, Any], n: int) -> Reply:
        done, turn = results(request), turn_text(request)
        if "GOAL" in turn:
            return tool_uses(
                (
                    "a1",
                    "Agent",
                    {"description": "sync helper", "prompt": "Run `echo sub-sync`", "model": "offline"},
                )
            )
        if "a1" in done:
            seen["sync"] = done["a1"]
            return tool_uses(("a2", "Agent", background("bg helper", "Run `sleep 0.3; echo sub-bg`")))
        if "a2" in done:
            seen["launched"] = json.loads(done["a2"][0])
            return text("The helper runs in the background.")
        if "<task-notification>" in turn:
            seen["notification"] = turn
            slow = background("slow", "`sleep 60`")
            return tool_uses(("a3", "Agent", slow))
        if "a3" in done:
            seen["slow"] = json.loads(done["a3"][0])["agentId"]
            return tool_uses(("a4", "TaskOutput", {"task_id": seen["slow"], "block": False}))
        if "a4" in done:
            seen["output"] = json.loads(done["a4"][0])
            return tool_uses(("a5", "TaskStop", {"task_id": seen["slow"]}))
        if "a5" in done:
            seen["stop"] = done["a5"]
            return text("Helpers done.")
        return text("?")

    with serve(script, monkeypatch):
        team = Team.create("t", root=root, cwd=str(root))
        result = team.lead("GOAL: use helpers.", model=LEAD_MODEL, timeout=60)
    assert result.stopped_by == "done", result
    assert result.answer == "Helpers done."
    answer, is_error = seen["sync"]  # the answer, then Claude Code's agentId and <usage> lines
    assert (
        not is_error and answer.startswith("sub-sync\n\nagentId: sub-") and "<usage>total_tokens:" in answer
    )
    assert seen["launched"]["status"] == "async_launched" and seen["launched"]["agentId"].startswith("sub-")
    assert "<status>completed</status>" in seen["notification"] and "sub-bg" in seen["notification"]
    assert seen["output"]["status"] == "running"
    stop, is_error = seen["stop"]
    assert not is_error and json.loads(stop)["status"] == "killed"
    # The subagents' conversations are sidechains of the lead's transcript.
    lines = [json.loads(x) for x in team.paths.transcript("team-lead").read_text().splitlines()]
    sidechains = {e["agentId"] for e in lines if e.get("isSidechain")}
    assert seen["launched"]["agentId"] in sidechains and len(sidechains) == 3
    nothing_left_under(root)


def test_kill_9_of_a_parent_leaves_no_subagent_running(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def script(request: dict[str, Any], n: int) -> Reply:
        if "GOAL" in turn_text(request):
            slow = background("slow", "`sleep 60`")
            return tool_uses(("a1", "Agent", slow))
        return text("Waiting for the helper.")

    with serve(script, monkeypatch):
        team = Team.create("t", root=root, cwd=str(root))
        lead = LeadRun(
            team, "GOAL: start a slow helper.", model=LEAD_MODEL, timeout=60, interactive=False, verbose=False
        )
        try:

            def helper() -> Any:
                return next((t for t in team.status().teammates if t.role == "subagent" and t.pid), None)

            sub = wait_for(helper)
            wait_for(lambda: len(team.ps().teammates[0].children) > 0)  # its `sleep 60`
            tool = team.ps().teammates[0].children[0].pid
            shown = subprocess.run(
                [sys.executable, "-m", "supervisor.cli", "ps", "t", "--root", str(root)],
                capture_output=True,
                text=True,
            ).stdout
            lines = shown.splitlines()
            lead_line = next(
                i for i, line in enumerate(lines) if line.startswith(("├─ team-lead", "└─ team-lead"))
            )
            assert (
                lines[lead_line + 1][4:].startswith(f"└─ {sub.name}") and "(subagent of team-lead)" in shown
            )

            os.kill(lead.pid, signal.SIGKILL)
            wait_for(lambda: not alive([sub.pid, tool]))

            def record() -> Any:  # the supervisor writes it once it has reaped the subagent
                found = json.loads(team.paths.subagent_result(sub.name).read_text())
                return found if found["status"] != "running" else None

            found = wait_for(record)
            assert found["status"] == "killed" and found["parent"] == "team-lead"
        finally:
            result = lead.wait()
    assert result.stopped_by == "error" and "without a result" in result.error
    nothing_left_under(root)


def test_bad_tool_input_from_the_lead_is_a_tool_error_it_can_read(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, tuple[str, bool]] = {}

    def script(request: dict[str, Any], n: int) -> Reply:
        if "You are a subagent" in str(request.get("system", "")):
            if results(request):
                seen.update({f"sub-{k}": v for k, v in results(request).items()})
                return text("I cannot start teammates.")
            return tool_uses(("x1", "Agent", worker("mallory")))
        done = results(request)
        if "GOAL" in turn_text(request):
            return tool_uses(
                ("b1", "Agent", worker("reviewer", subagent_type="Reviewer")),
                ("b2", "Agent", worker("alice")),
                ("b3", "Agent", worker("alice")),
                ("b4", "TaskUpdate", {"taskId": "99", "status": "completed"}),
                ("b5", "Agent", {"description": "helper", "prompt": "Please spawn a teammate."}),
                ("b6", "Agent", worker("x", model="gpt-4")),
            )
        if "b1" in done:
            seen.update(done)
            return text("I will fix my requests.")
        return text("ok")

    with serve(script, monkeypatch):
        team = Team.create("t", root=root, cwd=str(root))
        result = team.lead("GOAL: try bad things.", model=LEAD_MODEL, timeout=60)
    assert result.stopped_by == "done", result
    assert seen["b1"][1] and "unknown agent type 'Reviewer'" in seen["b1"][0]
    assert not seen["b2"][1]
    assert seen["b3"][1] and "already has a teammate named 'alice'" in seen["b3"][0]
    assert seen["b4"][1] and "99" in seen["b4"][0]
    assert seen["b5"][0].startswith("I cannot start teammates.\n\nagentId: ") and not seen["b5"][1]
    assert seen["sub-x1"][1] and "no tool named 'Agent'" in seen["sub-x1"][0]
    assert seen["b6"][1] and "gpt-4" in seen["b6"][0]
    assert [m.name for m in team.config().teammates()] == ["alice"]  # nothing half-made
    assert sorted(p.name for p in team.paths.inboxes.glob("*.json")) == ["alice.json", "team-lead.json"]
    nothing_left_under(root)


def test_a_teammate_uses_a_background_subagent_and_hears_of_it_as_a_turn(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def script(request: dict[str, Any], n: int) -> Reply:
        turn, done = turn_text(request), results(request)
        if "Start with task #1" in turn:
            bg = background("helper", "`echo from-the-helper`")
            return tool_uses(("h1", "Agent", bg))
        if "<task-notification>" in turn:
            found = re.search(r"<result>(.*)</result>", turn)
            assert found is not None
            return tool_uses(
                ("t1", "TaskUpdate", {"taskId": "1", "status": "completed"}),
                (
                    "t2",
                    "SendMessage",
                    {"to": "team-lead", "message": f"helper said {found[1]}", "summary": "helper"},
                ),
            )
        if done:
            return text("ok")
        return text("Ready.")

    with serve(script, monkeypatch), running_team(root) as team:
        team.spawn("ada", prompt="You delegate.", model=LEAD_MODEL)
        team.tasks.create("Ask a helper", "x")
        team.wait_until(lambda t: t.tasks.get("1").status == "completed", timeout=30)
        wait_for(
            lambda: [m for m in team.inbox("team-lead").history() if m.text == "helper said from-the-helper"]
        )
        subs = [json.loads(p.read_text()) for p in (team.paths.team_dir / "subagents").glob("*.json")]
        assert [(s["parent"], s["status"], s["notified"]) for s in subs] == [("ada", "completed", True)]
