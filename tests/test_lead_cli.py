"""`agentteams lead` and `agentteams chat` on the offline lead, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from supervisor import Team
from supervisor.lead_runner import LeadProcess
from tests.runtime_helpers import nothing_left_under, wait_for

GOAL = """Count some numbers, in order.
Teammates: 2
1. Make the numbers: `seq 1 100 > numbers.txt && echo make >> order.txt`
2. Count them [after 1]: `wc -l < numbers.txt > count.txt && echo count >> order.txt`
3. Sum them [after 1]: `paste -sd+ numbers.txt | bc > sum.txt && echo sum >> order.txt`
4. Report [after 2, 3]: `echo "$(cat count.txt) numbers, sum $(cat sum.txt)" && echo report >> order.txt`
"""


def agentteams(
    root: Path, *args: str, stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "supervisor.cli", "--root", str(root / "state"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=root,
        input=stdin,
    )


def test_the_offline_lead_runs_a_goal_to_the_end_from_the_command_line(root: Path) -> None:
    (root / "goal.txt").write_text(GOAL)
    done = agentteams(root, "lead", "numbers", "--prompt", "@goal.txt", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["stopped_by"] == "done" and result["answer"].startswith("Done: 4 of 4 tasks completed.")
    assert "#4 Report: completed" in result["answer"] and "100 numbers, sum 5050" in result["answer"]
    order = (root / "order.txt").read_text().split()
    assert order[0] == "make" and order[-1] == "report" and sorted(order[1:3]) == ["count", "sum"]
    assert sorted(result["teammates"]) == ["worker-1", "worker-2"]
    assert not (root / "state" / "teams" / "numbers").exists()  # deleted by the lead
    nothing_left_under(root / "state")


def test_bad_lead_input_is_one_line_and_changes_nothing(root: Path) -> None:
    for args, message in (
        (("--model", "gpt-4"), "model 'gpt-4'"),
        (("--timeout", "0"), "--timeout 0"),
        (("--prompt", " "), "the lead needs a goal"),
    ):
        argv = ["lead", "t", *(args if "--prompt" in args else ("--prompt", "x", *args))]
        out = agentteams(root, *argv)
        assert out.returncode == 1 and out.stderr.count("\n") == 1 and message in out.stderr, out.stderr
    assert not (root / "state" / "teams").exists()


def test_a_goal_the_offline_lead_cannot_plan_is_answered_not_crashed_on(root: Path) -> None:
    out = agentteams(root, "lead", "t", "--prompt", "1. First [after 2]: `true`\n2. Second: `true`")
    assert out.returncode == 0, out.stderr
    assert "step 1 waits for step 2, which is not an earlier step" in out.stdout
    out = agentteams(root, "lead", "t", "--prompt", "Just do something clever.")
    assert out.returncode == 0 and "I need steps to hand out" in out.stdout
    nothing_left_under(root / "state")


def test_a_lead_that_runs_out_of_time_says_so_and_stops_everything(root: Path) -> None:
    out = agentteams(root, "lead", "t", "--prompt", "1. Wait: `sleep 30`", "--timeout", "2")
    assert out.returncode == 1
    assert "the lead stopped (timeout): stopped after 2s with the team's work unfinished" in out.stderr
    nothing_left_under(root / "state")


def test_one_lead_at_a_time(root: Path) -> None:
    team = Team.create("t", root=root / "state", cwd=str(root))
    lead = LeadProcess(
        team, "1. Wait: `sleep 30`", model="offline", timeout=30, interactive=False, verbose=False
    )
    try:
        wait_for(lambda: team.status().lead_pid == lead.pid)
        out = agentteams(root, "lead", "t", "--prompt", "1. Other: `true`")
        assert out.returncode == 1 and f"already has a lead agent running (pid {lead.pid})" in out.stderr
    finally:
        lead.proc.terminate()
        lead.wait()
    nothing_left_under(root / "state")


def test_chat_shows_teammates_messages_between_turns_and_the_leads_answers(root: Path) -> None:
    (root / "plan.md").write_text(GOAL)
    proc = subprocess.Popen(
        [sys.executable, "-m", "supervisor.cli", "--root", str(root / "state"), "chat", "c", "--allow-pipe"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("Plan file: plan.md\n")
    proc.stdin.flush()
    lines = []
    for line in proc.stdout:  # the input stays open, as a terminal's does, until the lead is done
        lines.append(line)
        if line.startswith("lead> "):
            break
    out, err = proc.communicate("/exit\n", timeout=60)
    out = "".join(lines) + out
    assert proc.returncode == 0, err
    assert "Talking to the lead of team 'c'" in err
    assert '<teammate-message teammate_id="worker-1"' in out and "Completed task #1: Make the numbers" in out
    assert "lead> Done: 4 of 4 tasks completed." in out
    nothing_left_under(root / "state")


def test_chat_refuses_a_pipe_unless_asked(root: Path) -> None:
    out = agentteams(root, "chat", "c", stdin="hello\n")
    assert out.returncode == 1 and "chat reads what you type from a terminal" in out.stderr
