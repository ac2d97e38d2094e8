"""`agentteams lead` and `agentteams chat` on the offline lead, as a user runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentproc.models.offline_lead import PlanError, parse_steps
from ipc.paths import TeamPaths
from supervisor import Team
from supervisor.client.lead_runner import LeadRun
from tests.runtime_helpers import AGENTTEAMS, nothing_left_under, wait_for

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
    assert not (root / "state" / "teams" / "numbers").exists()  # it made the team, and removed it
    assert result["kept"] is False
    assert not TeamPaths(root / "state", "numbers").runtime_path().exists()  # its sockets and logs too
    nothing_left_under(root / "state")


def test_a_lead_on_an_existing_team_works_within_it_and_leaves_it(root: Path) -> None:
    state = root / "state"
    for args in (
        ("team", "create", "precious"),
        ("up", "precious"),
        ("spawn", "precious", "bob", "--prompt", "Work through the task list."),
        ("task", "create", "precious", "Important pending work"),
        ("send", "precious", "team-lead", "note to self: keep this", "--summary", "note", "--from", "bob"),
    ):
        assert agentteams(root, *args).returncode == 0
    try:
        done = agentteams(root, "lead", "precious", "--prompt", "1. One extra step: `echo extra`", "--json")
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["stopped_by"] == "done" and result["kept"] is True
        assert result["answer"].endswith(
            "The team stays: team 'precious' is not this lead's to delete (it existed before the lead started); it stays as it is, with its members and tasks"
        )
        team = Team.open("precious", root=state)  # still there, with everything in it
        assert [m.name for m in team.config().teammates()] == ["bob"]
        assert team.status().teammate("bob") is not None  # and bob still at work
        assert [t.subject for t in team.tasks.list()] == ["Important pending work", "One extra step"]
        assert any(m.text == "note to self: keep this" for m in team.inbox("team-lead").history())
        assert (state / "teams" / "precious" / "transcripts").is_dir()
    finally:
        agentteams(root, "down", "precious")
    nothing_left_under(state)


def test_a_failed_goal_exits_3_keeps_the_team_and_can_be_retried(root: Path) -> None:
    goal = "Teammates: 1\n1. Make: `echo made > made.txt`\n2. Break [after 1]: `exit 1`\n3. Last [after 2]: `true`"
    failed = agentteams(root, "lead", "t", "--prompt", goal, "--json")
    assert failed.returncode == 3, failed.stderr
    result = json.loads(failed.stdout)
    assert result["stopped_by"] == "failed" and result["kept"] is True
    assert "task #2 (Break) failed: Exit code 1" in result["error"]
    assert result["answer"].startswith("Stopped: 1 of 3 tasks completed.")
    assert [t["status"] for t in result["tasks"]] == ["completed", "failed", "pending"]
    assert failed.stderr.count("\n") == 1 and "the team is kept: 'agentteams task list t'" in failed.stderr
    listed = agentteams(root, "task", "list", "t").stdout
    assert "#2\tfailed" in listed  # the team is there, with the failure to look at
    # The README's way out: fix the command, set it pending, and hand the team to a lead again.
    fixed = agentteams(root, "task", "update", "t", "2", "--command", "true", "--status", "pending")
    assert fixed.returncode == 0, fixed.stderr
    again = agentteams(root, "lead", "t", "--prompt", "Teammates: 1", "--json")
    assert again.returncode == 0, again.stderr
    assert [t["status"] for t in json.loads(again.stdout)["tasks"]] == ["completed"] * 3
    assert (root / "state" / "teams" / "t").exists()  # this lead did not make it: it stays
    nothing_left_under(root / "state")


def test_keep_keeps_the_team_a_lead_made(root: Path) -> None:
    done = agentteams(root, "lead", "k", "--prompt", "1. One: `true`", "--keep", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["kept"] is True
    assert result["answer"].endswith(
        "team 'k' is not this lead's to delete (--keep was given); it stays as it is, with its members and tasks"
    )
    team = Team.open("k", root=root / "state")
    assert [t.status for t in team.tasks.list()] == ["completed"] and team.config().teammates() == []
    # worker-1 left on the lead's shutdown request, which the supervisor did not send
    log = (team.paths.runtime_dir() / "supervisor.log").read_text()
    assert "worker-1 pid" in log and "unexpectedly" not in log, log
    nothing_left_under(root / "state")


def test_a_step_marked_subagent_is_done_by_a_subagent_of_its_teammate(root: Path) -> None:
    goal = "Teammates: 1\n1. Make it: `echo 21 > n.txt`\n2. Double it [after 1] [subagent]: `awk '{print 2 * $1}' n.txt`\n"
    done = agentteams(root, "lead", "sub", "--prompt", goal, "--keep", "--json")
    assert done.returncode == 0, done.stderr
    assert "#2 Double it: completed" in json.loads(done.stdout)["answer"]
    team = Team.open("sub", root=root / "state")
    assert team.tasks.get("2").meta == {"subagent": "Double it: `awk '{print 2 * $1}' n.txt`"}
    records = [json.loads(p.read_bytes()) for p in (team.paths.team_dir / "subagents").glob("*.json")]
    assert [(r["parent"], r["status"], r["result"]) for r in records] == [("worker-1", "completed", "42")]
    log = (team.paths.runtime_dir() / "supervisor.log").read_text()
    assert "sub-" in log and "unexpectedly" not in log, log  # the subagent finished: exit 0
    nothing_left_under(root / "state")


def test_the_subagent_mark_is_read_on_either_side_of_the_blockers() -> None:
    steps, _ = parse_steps(
        "1. A: `a`\n2. B [subagent] [after 1]: `b`\n3. C [after 1, 2] [ subagent ]\n4. D [after 3]"
    )
    assert [(s.after, s.subagent) for s in steps] == [
        ((), False),
        ((1,), True),
        ((1, 2), True),
        ((3,), False),
    ]


def test_ctrl_c_ends_the_lead_with_130_and_leaves_nothing_running(root: Path) -> None:
    proc = subprocess.Popen(
        [
            *AGENTTEAMS,
            "--root",
            str(root / "state"),
            "lead",
            "c",
            "--prompt",
            "1. Wait: `sleep 60`",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    team = Team("c", root / "state")
    wait_for(lambda: team.is_up() and any(m.children for m in team.ps().teammates), timeout=30)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert json.loads(out)["stopped_by"] == "interrupted"
    assert err.strip().splitlines()[-1] == (
        "agentteams: the lead stopped (interrupted): interrupted; the team is kept: 'agentteams task list c'"
    )
    assert team.store.exists()  # its task did not complete: kept
    nothing_left_under(root / "state")


@pytest.mark.parametrize("command", ["lead", "run"])
def test_kill_9_of_the_command_that_started_the_team_leaves_nothing_running(root: Path, command: str) -> None:
    # Its clean-up is a `finally`, which a kill -9 never runs: the supervisor, its fork
    # server and teammates, and the lead agent went on with no one to bring them down.
    tmp = root / "tmp"
    tmp.mkdir()
    if command == "lead":
        args = ["lead", "k", "--prompt", "1. Wait: `sleep 60`"]
    else:
        (root / "team.toml").write_text(
            '[team]\nname = "k"\n[[teammates]]\nname = "w"\n[[tasks]]\nkey = "w"\nsubject = "Wait"\ncommand = "sleep 60"\n'
        )
        args = ["run", str(root / "team.toml")]
    proc = subprocess.Popen(
        [*AGENTTEAMS, "--root", str(root / "state"), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=root,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    team = Team("k", root / "state")
    wait_for(lambda: team.is_up() and any(m.children for m in team.ps().teammates), timeout=30)
    proc.kill()
    proc.wait()
    nothing_left_under(root / "state", timeout=20)
    assert not team.is_up()
    assert list(tmp.iterdir()) == []  # the lead's result folder too: no one is left to read it


def test_the_example_goal_runs_where_it_is_told(root: Path) -> None:
    example = Path(__file__).parent.parent / "examples" / "goal.md"
    work = root / "words"
    done = agentteams(root, "lead", "words", "--prompt", f"@{example}", "--cwd", str(work))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Done: 5 of 5 tasks completed.") and "12000" in done.stdout
    assert (work / "total.txt").read_text() == "12000\n"
    assert sorted(p.name for p in root.iterdir()) == ["state", "words"]  # nothing else written
    existing = agentteams(root, "team", "create", "other")
    assert existing.returncode == 0
    refused = agentteams(root, "lead", "other", "--prompt", "1. x: `true`", "--cwd", str(work))
    assert refused.returncode == 1 and "--cwd applies to a team the lead makes" in refused.stderr
    nothing_left_under(root / "state")


def test_lead_help_shows_the_goal_format() -> None:
    shown = subprocess.run([*AGENTTEAMS, "lead", "--help"], capture_output=True, text=True).stdout
    assert "Teammates: 2" in shown and "2. Count it [after 1]: `wc -c raw.txt`" in shown
    assert "3. Check it [after 2] [subagent]: `test -s raw.txt`" in shown
    assert "Plan file: plan.md" in shown and "examples/goal.md" in shown
    assert "exit" in shown and "130" in shown


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


def test_a_goal_the_offline_lead_cannot_plan_is_answered_and_fails_and_leaves_no_team(root: Path) -> None:
    out = agentteams(root, "lead", "t", "--prompt", "1. First [after 2]: `true`\n2. Second: `true`")
    assert out.returncode == 1, out.stderr
    assert "step 1 waits for step 2, which is not an earlier step" in out.stdout
    assert "the lead stopped (error)" in out.stderr
    out = agentteams(root, "lead", "t", "--prompt", "Just do something clever.")
    assert out.returncode == 1 and "I need steps to hand out" in out.stdout
    assert not (root / "state" / "teams" / "t").exists()  # the empty team it made is gone
    nothing_left_under(root / "state")


def test_a_goal_it_cannot_plan_still_fails_when_a_message_was_waiting(root: Path) -> None:
    # The Quickstart leaves reports unread in team-lead's inbox; the lead's turn on them
    # succeeded, so a goal never taken on ended 'done', exit 0, with the error beside it.
    team = Team.create("t", root=root / "state", cwd=str(root))
    team.up()
    try:
        team.spawn("alice", prompt="")
        team.send("team-lead", "a report", summary="report", sender="alice")
        out = agentteams(root, "lead", "t", "--prompt", "Just do something clever.", "--json")
        assert out.returncode == 1, out.stderr
        result = json.loads(out.stdout)
        assert result["stopped_by"] == "error" and result["error"] == "I need steps to hand out", result
    finally:
        team.down(grace=2)
        team.close()


def test_a_lead_that_runs_out_of_time_says_so_and_stops_everything(root: Path) -> None:
    before = time.time_ns()
    out = agentteams(root, "lead", "t", "--prompt", "1. Wait: `sleep 30`", "--timeout", "2", "--json")
    after = time.time_ns()
    assert out.returncode == 4
    assert "the lead stopped (timeout): stopped after 2s with the team's work unfinished" in out.stderr
    result = json.loads(out.stdout)
    assert result["stopped_by"] == "timeout"
    # The clock --timeout counts from is the lead's, started within the command, and the
    # command ended after its limit: the stop can be told apart from the start-up.
    assert before < result["started_ns"] < result["started_ns"] + 2_000_000_000 <= after
    assert result["seconds"] >= 2
    nothing_left_under(root / "state")


def test_one_lead_at_a_time(root: Path) -> None:
    team = Team.create("t", root=root / "state", cwd=str(root))
    lead = LeadRun(team, "1. Wait: `sleep 30`", model="offline", timeout=30, interactive=False, verbose=False)
    try:
        wait_for(lambda: team.status().lead_pid == lead.pid)
        out = agentteams(root, "lead", "t", "--prompt", "1. Other: `true`")
        assert out.returncode == 1 and f"already has a lead agent running (pid {lead.pid})" in out.stderr
        # Nor may a person's wait take what the lead reads (a look still may).
        out = agentteams(root, "wait", "t", "--timeout", "1")
        assert out.returncode == 1 and f"already has a lead agent running (pid {lead.pid})" in out.stderr
        assert "inbox t team-lead" in out.stderr
    finally:
        lead.proc.terminate()
        lead.wait()
    nothing_left_under(root / "state")


def test_chat_shows_teammates_messages_between_turns_and_the_leads_answers(root: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "supervisor.cli", "--root", str(root / "state"), "chat", "c", "--allow-pipe"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(GOAL)  # pasted: its lines are one turn, the goal
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
    assert "worker-1: Completed task #1: Make the numbers" in out  # as a person reads it
    assert "<teammate-message" not in out and "[idle] worker-1 is idle" in out
    assert "lead> Done: 4 of 4 tasks completed." in out
    nothing_left_under(root / "state")


def test_chat_reading_a_pipe_sees_its_goal_through_after_the_pipe_ends(root: Path) -> None:
    # It used to end at the pipe's end, as at a Ctrl-D, before the lead's first turn.
    done = subprocess.run(
        [sys.executable, "-m", "supervisor.cli", "--root", str(root / "state"), "chat", "c", "--allow-pipe"],
        input=GOAL,
        capture_output=True,
        text=True,
        cwd=root,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    assert "worker-1: Completed task #1: Make the numbers" in done.stdout
    assert "lead> Done: 4 of 4 tasks completed." in done.stdout, done.stdout
    nothing_left_under(root / "state")


def chat_in_a_terminal(root: Path) -> tuple[subprocess.Popen[str], int]:
    """``agentteams chat c --keep`` reading a terminal: the process, and the terminal's end
    to type into (the caller closes it)."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "supervisor.cli", "--root", str(root / "state"), "chat", "c", "--keep"],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    os.close(slave)
    return proc, master


@pytest.mark.parametrize("ending", [b"/exit\n", b"\x04"])  # Ctrl-D: a terminal says end of input once
def test_chat_takes_lines_pasted_into_a_terminal_as_one_turn(root: Path, ending: bytes) -> None:
    # A terminal hands over one line a read: the goal's first line used to be a turn of its
    # own ("I need steps to hand out", a failed turn) and the steps another.
    proc, master = chat_in_a_terminal(root)
    try:
        assert proc.stdout is not None
        os.write(master, GOAL.encode())  # pasted at once
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("lead> "):
                break
        os.write(master, ending)
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
    shown = "".join(lines)
    assert proc.returncode == 0, err
    assert shown.count("lead> ") == 1 and "lead> Done: 4 of 4 tasks completed." in shown, shown
    nothing_left_under(root / "state")


def test_chat_refuses_a_pipe_unless_asked(root: Path) -> None:
    out = agentteams(root, "chat", "c", stdin="hello\n")
    assert out.returncode == 1 and "chat reads what you type from a terminal" in out.stderr


@pytest.mark.parametrize(
    "line",
    [
        "2. B [subagents]: `b`",
        "2. B [afterr 1]",
        "2. Build v2: the fast one: `b`",
        "2. B `x`: `b`",
        "2. B `b`",
        "2. B: `b` then `c`",
        "2. B [after 1] : `b` # note",
    ],
)
def test_a_step_line_that_cannot_be_read_is_refused_not_dropped(line: str) -> None:
    with pytest.raises(PlanError, match="cannot read the step '2. B"):
        parse_steps(f"1. A: `a`\n{line}\n3. C [after 1]")


def test_a_numbered_line_that_does_not_end_as_a_step_does_is_not_refused() -> None:
    steps, _ = parse_steps("1. Read the [docs] first\n2. A: `a`")
    assert [(s.number, s.subject) for s in steps] == [(2, "A")]


def test_a_failed_last_step_is_stopped_not_done_and_a_retry_with_nothing_open_says_so(root: Path) -> None:
    goal = "Teammates: 1\n1. Echo: `echo hi`\n2. Fail [after 1]: `exit 3`"
    failed = agentteams(root, "lead", "t", "--prompt", goal, "--json")
    assert failed.returncode == 3, failed.stderr
    assert json.loads(failed.stdout)["answer"].startswith("Stopped: 1 of 2 tasks completed.")
    agentteams(root, "task", "update", "t", "2", "--command", "true", "--status", "completed")
    again = agentteams(root, "lead", "t", "--prompt", "Teammates: 1", "--json")
    assert again.returncode == 1
    assert "every task of the team is completed" in json.loads(again.stdout)["answer"]
    nothing_left_under(root / "state")


def test_a_goal_the_offline_lead_refuses_is_named_whole_and_a_nan_timeout_is_refused(root: Path) -> None:
    out = agentteams(root, "lead", "t", "--prompt", "Teammates: 2\n1. Bad: step with colon: `echo hi`")
    assert out.returncode == 1, out.stderr
    assert "cannot read the step '1. Bad: step with colon: `echo hi`'" in out.stderr, out.stderr
    out = agentteams(root, "lead", "t", "--prompt", "Teammates: 0\n1. A: `true`")
    assert out.returncode == 1 and "'Teammates: 0': give 1 to 64" in out.stderr, out.stderr
    out = agentteams(root, "lead", "t", "--prompt", "1. A: `true`", "--timeout", "nan")
    assert out.returncode == 1 and "--timeout nan: give a number of seconds above 0" in out.stderr, out.stderr
    nothing_left_under(root / "state")


def test_chat_that_keeps_its_team_follows_a_second_goal_through(root: Path) -> None:
    proc, master = chat_in_a_terminal(root)
    shown: list[str] = []
    try:
        assert proc.stdout is not None
        for goal in ("Teammates: 1\n1. A: `echo aa`\n", "Teammates: 1\n1. B: `echo bb`\n"):
            os.write(master, goal.encode())  # pasted at once
            for line in proc.stdout:
                shown.append(line)
                if line.startswith("lead> "):
                    break
        os.write(master, b"/exit\n")
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
    text = "".join(shown) + out
    assert proc.returncode == 0, err
    # The second goal is followed to its end too: reported, and its teammate sent away.
    assert text.count("lead> Done") == 2 and "lead> Done: 2 of 2 tasks completed." in text, text
    assert text.count("[shutdown approved] worker-1") == 2, text
    nothing_left_under(root / "state")


def test_a_lead_whose_team_is_brought_down_stops_with_the_work_unfinished(root: Path) -> None:
    team = Team.create("t", root=root / "state", cwd=str(root))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "supervisor.cli",
            "--root",
            str(root / "state"),
            "lead",
            "t",
            "--prompt",
            "1. A: `sleep 30`",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    try:
        wait_for(lambda: team.is_up() and team.status().lead_pid is not None, timeout=30)
        team.down(grace=2)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        team.close()
    # It saw the supervisor gone, not a status call timing out as an error.
    assert proc.returncode == 3 and "the lead stopped (unfinished)" in err, err
    nothing_left_under(root / "state")
