"""Plan mode, permission requests and hooks, with real offline teammates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ipc.schemas import PermissionRequest, PlanApprovalRequest, PlanApprovalResponse, parse_body
from supervisor import Team
from tests.runtime_helpers import cli, running_team, wait_for


def bodies(team: Any, agent: str, kind: type) -> list[Any]:
    return [b for m in team.inbox(agent).history() if isinstance(b := parse_body(m.text), kind)]


def test_plan_mode_auto_policy_approves_with_the_lead_mode(root: Path) -> None:
    with running_team(root, plan_approval="auto") as team:
        team.spawn("planner", prompt="p", plan_mode_required=True)
        assert team.store.require_member("planner").plan_mode_required is True
        task = team.tasks.create("Make a file", metadata={"command": "touch made.txt"})
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
        (request,) = bodies(team, "team-lead", PlanApprovalRequest)
        assert request.request_id.startswith("plan_approval-") and request.request_id.endswith("@planner@t")
        assert Path(request.plan_file_path).read_text() == request.plan_content
        (response,) = bodies(team, "planner", PlanApprovalResponse)
        assert response.approved and response.permission_mode == "acceptEdits"
        assert (root / "made.txt").exists()


def test_the_permission_mode_plan_plans_too(root: Path) -> None:
    # Not required at spawn but put in plan mode by `mode`: read-only until a plan is approved.
    with running_team(root, plan_approval="auto") as team:
        team.spawn("planner", prompt="p")
        cli(root, "mode", "t", "planner", "plan")
        task = team.tasks.create("Make a file", metadata={"command": "touch made.txt"}, owner="planner")
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
        (request,) = bodies(team, "team-lead", PlanApprovalRequest)
        assert "touch made.txt" in request.plan_content
        assert (root / "made.txt").exists()


def test_plan_mode_lead_policy_rejects_then_approves_the_revision(root: Path) -> None:
    with running_team(root, plan_approval="lead") as team:
        team.spawn("planner", prompt="p", plan_mode_required=True)
        task = team.tasks.create("Make a file", metadata={"command": "touch made.txt"})
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
        requests = bodies(team, "team-lead", PlanApprovalRequest)
        responses = bodies(team, "planner", PlanApprovalResponse)
        assert len(requests) == 2 and requests[0].request_id != requests[1].request_id
        assert [r.approved for r in responses] == [False, True]
        assert "two concrete steps" in responses[0].feedback
        assert "Address the lead's feedback" in requests[1].plan_content


def test_plan_mode_human_policy_through_the_cli(root: Path) -> None:
    team = Team.create("t", root=root, cwd=str(root))
    cli(root, "up", "t", "--plan-approval", "human")
    try:
        _human_plan_flow(root, team)
    finally:
        cli(root, "down", "t")


def _human_plan_flow(root: Path, team: Any) -> None:
    team.spawn("planner", prompt="p", plan_mode_required=True)
    task = team.tasks.create("Make a file", metadata={"command": "touch made.txt"})
    team.wake("*")
    first = wait_for(lambda: team.pending_requests())[0]
    assert not (root / "made.txt").exists()  # read-only until approved
    cli(root, "deny", "t", first.request_id, "--feedback", "Also check the file exists")
    second = wait_for(lambda: [r for r in team.pending_requests() if r.request_id != first.request_id])[0]
    assert "Also check the file exists" in second.plan_content
    again = cli(root, "deny", "t", first.request_id, ok=False)
    assert again.returncode == 1 and "already been answered" in again.stderr
    wrong = cli(root, "approve", "t", second.request_id, "--always", ok=False).stderr
    assert "is a plan approval: 'always' is for permission requests; leave it out" in wrong, wrong
    cli(root, "approve", "t", second.request_id)
    team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
    assert "no pending request" in cli(root, "approve", "t", "plan_approval-1@x@t", ok=False).stderr


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    return path


def test_a_permission_denied_by_a_person_leaves_the_tool_unrun_and_the_model_told(
    root: Path, outside: Path
) -> None:
    target = outside / "file.txt"
    with running_team(root) as team:
        team.spawn("dev", prompt="p", permission_mode="acceptEdits")
        task = team.tasks.create("Write outside", metadata={"command": f"echo x > {target}"})
        team.wake("*")
        request = wait_for(lambda: team.pending_requests())[0]
        assert (
            isinstance(request, PermissionRequest)
            and request.tool_name == "Bash"
            and request.agent_id == "dev"
        )
        assert (
            request.request_id.startswith("perm-")
            and request.permission_suggestions[0]["type"] == "addDirectories"
        )
        team.deny(request.request_id, feedback="not there, please")
        report = wait_for(
            lambda: [m for m in team.inbox("team-lead").history() if m.text.startswith("Task #1")]
        )
        assert "Permission denied by the lead: not there, please" in report[0].text
        assert not target.exists()
        assert team.tasks.get(task.id).failed  # given back with the reason, not left in progress
        transcript = (root / "teams" / "t" / "transcripts" / "dev.jsonl").read_text()
        assert "Permission denied by the lead" in transcript


def test_a_permission_request_that_times_out_is_denied(
    root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTTEAMS_PERMISSION_TIMEOUT", "1")
    target = outside / "file.txt"
    with running_team(root) as team:
        team.spawn("dev", prompt="p", permission_mode="acceptEdits")
        team.tasks.create("Write outside", metadata={"command": f"echo x > {target}"})
        team.wake("*")
        report = wait_for(
            lambda: [m for m in team.inbox("team-lead").history() if m.text.startswith("Task #1")], timeout=20
        )
        assert "no answer to permission request" in report[0].text
        assert not target.exists()


def test_an_approved_permission_runs_with_the_updated_input(root: Path, outside: Path) -> None:
    original, changed = outside / "original.txt", outside / "changed.txt"
    with running_team(root) as team:
        team.spawn("dev", prompt="p", permission_mode="acceptEdits")
        task = team.tasks.create("Write outside", metadata={"command": f"echo x > {original}"})
        team.wake("*")
        request = wait_for(lambda: team.pending_requests())[0]
        # What belongs to a plan's approval is refused, not dropped, and nothing is sent.
        wrong = cli(root, "approve", "t", request.request_id, "--permission-mode", "plan", ok=False).stderr
        assert "is a permission request: a permission mode is for plan approvals" in wrong, wrong
        assert team.pending_requests()[0].request_id == request.request_id
        cli(
            root,
            "approve",
            "t",
            request.request_id,
            "--input",
            json.dumps({"command": f"echo y > {changed}"}),
        )
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=20)
        assert changed.read_text() == "y\n" and not original.exists()


def test_dont_ask_denies_without_asking_and_bypass_never_asks(root: Path, outside: Path) -> None:
    with running_team(root) as team:
        team.spawn("careful", prompt="p", permission_mode="dontAsk")
        team.tasks.create("Outside", metadata={"command": f"touch {outside / 'a'}"})
        team.wake("*")
        report = wait_for(
            lambda: [m for m in team.inbox("team-lead").history() if m.text.startswith("Task #1")]
        )
        assert "dontAsk mode denies" in report[0].text and team.pending_requests() == []
        assert not (outside / "a").exists()
        team.shutdown("careful")  # else, idle, it would claim the next task too
        team.spawn("bold", prompt="p", permission_mode="bypassPermissions")
        task = team.tasks.create("Outside too", metadata={"command": f"touch {outside / 'b'}"})
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=20)
        assert (outside / "b").exists()


def write_settings(root: Path, hooks: dict[str, str]) -> None:
    settings = {
        "hooks": {event: [{"hooks": [{"type": "command", "command": cmd}]}] for event, cmd in hooks.items()}
    }
    (root / ".claude").mkdir(exist_ok=True)
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))


def test_task_completed_hook_exit_2_keeps_the_task_open_and_tells_the_model(root: Path) -> None:
    write_settings(
        root, {"TaskCompleted": "cat > task-hook-input.json; echo 'tests are missing' >&2; exit 2"}
    )
    with running_team(root) as team:
        team.spawn("dev", prompt="p")
        task = team.tasks.create("Build it", metadata={"command": "true"})
        team.wake("*")
        report = wait_for(
            lambda: [
                m for m in team.inbox("team-lead").history() if m.summary_text == f"Task #{task.id} failed"
            ]
        )
        assert "not completed" in report[0].text and "tests are missing" in report[0].text
        kept = team.tasks.get(task.id)  # not completed; given back with the reason, not left in progress
        assert kept.status == "pending" and kept.failed and "tests are missing" in str(kept.meta["lastError"])
        hook_input = json.loads((root / "task-hook-input.json").read_text())
        assert hook_input["hook_event_name"] == "TaskCompleted" and hook_input["task_id"] == task.id
        assert "tests are missing" in (root / "teams" / "t" / "transcripts" / "dev.jsonl").read_text()


def test_teammate_idle_hook_exit_2_keeps_the_teammate_working(root: Path) -> None:
    # Blocks the first time only (a counter file), then lets the teammate go idle.
    write_settings(
        root,
        {
            "TeammateIdle": "n=$(cat idle-count 2>/dev/null || echo 0); echo $((n+1)) > idle-count; "
            "[ $n -ge 1 ] || { echo 'check the task list again' >&2; exit 2; }"
        },
    )
    with running_team(root) as team:
        team.spawn("dev", prompt="p")
        wait_for(lambda: team.status().teammates[0].state == "idle")
        transcript = (root / "teams" / "t" / "transcripts" / "dev.jsonl").read_text()
        assert "TeammateIdle hook feedback: check the task list again" in transcript  # Claude Code's words
        assert int((root / "idle-count").read_text()) >= 2
