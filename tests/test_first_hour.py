"""What a new user met in the first hour, each reproduced: work in the wrong order or stuck,
processes that outlived their owner, options and names, what people see."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ipc.errors import AgentTeamsError, Timeout
from ipc.schemas import Task
from supervisor import Team
from tests.fake_anthropic import FakeAnthropic, error
from tests.runtime_helpers import AGENTTEAMS, alive, cli, running_team, team_pids, wait_for, wait_for_gone


def scenario(root: Path, name: str, tasks: list[dict[str, Any]], teammates: int = 2, extra: str = "") -> Path:
    # cwd ".": the commands run in the test's directory (beside the scenario), where they write.
    lines = [
        extra,
        f'[team]\nname = "{name}"\ncwd = "."\n',
        f'[[teammates]]\nname = "w"\ncount = {teammates}\n',
    ]
    for task in tasks:
        lines.append("[[tasks]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in task.items()))
    path = root / f"{name}.toml"
    path.write_text("\n".join(lines))
    return path


# ---------------------------------------------------------------- order and progress


def test_run_never_starts_a_task_before_its_blocker(root: Path) -> None:
    log = root / "order.log"
    tasks = [
        {"key": f"t{i}", "subject": f"step {i}", "command": f"echo {i} >> {log}", "blocked_by": ["gate"]}
        for i in range(120)
    ]
    tasks.append({"key": "gate", "subject": "the gate", "command": f"echo gate >> {log}"})
    cli(root, "run", str(scenario(root, "gated", tasks, teammates=3)))
    lines = log.read_text().split()
    assert lines[0] == "gate" and len(lines) == 121


def test_many_contending_teammates_finish_every_task_and_none_dies(root: Path) -> None:
    tasks = [{"key": f"t{i}", "subject": f"step {i}", "command": "true"} for i in range(120)]
    result = json.loads(cli(root, "run", str(scenario(root, "busy", tasks, teammates=6)), "--json").stdout)
    assert result["tasks_completed"] == result["tasks_total"] == 120
    events = [
        json.loads(line) for line in (root / "teams" / "busy" / "events.jsonl").read_text().splitlines()
    ]
    assert [e for e in events if e["status"] != "completed"] == [], "a teammate died"


def test_a_failing_task_ends_run_at_once_and_shows_as_failed(root: Path) -> None:
    path = scenario(
        root,
        "failing",
        [
            {"key": "a", "subject": "Fail", "command": "exit 3"},
            {"key": "b", "subject": "After", "command": "true", "blocked_by": ["a"]},
        ],
    )
    started = time.monotonic()
    out = cli(root, "run", str(path), ok=False)
    assert time.monotonic() - started < 30
    assert out.returncode == 3  # tasks failed, as lead says it
    assert "task #1 (Fail) failed: Exit code 3" in out.stderr and "--status pending" in out.stderr
    listed = cli(root, "task", "list", "failing").stdout
    assert "#1\tfailed" in listed


def test_turns_that_keep_failing_give_their_tasks_back_and_the_teammate_gives_up(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAnthropic(lambda request, n: error(500, "api_error")) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("AGENTTEAMS_API_RETRIES", "0")
        monkeypatch.setenv("AGENTTEAMS_MAX_FAILED_TURNS", "2")
        with running_team(root, restart="on-failure") as team:
            # The tasks are there before ada is: she takes them lowest first, with no wake's
            # hint (sent as each is created) to point her at a later one.
            tasks = [team.tasks.create(f"do it {i}") for i in range(3)]
            team.spawn("ada", prompt="", model="anthropic:claude-test")
            wait_for(
                lambda: team.status().teammates and team.status().teammates[0].state == "failed", timeout=30
            )
            first, second, third = (team.tasks.get(t.id) for t in tasks)
            for got in (first, second):  # given back, the failure recorded, not taken again
                assert got.status == "pending" and got.owner_name is None and got.failed
                assert "turn failed" in str(got.meta["lastError"])
            assert third.status == "pending" and not third.failed  # never hoarded
            (event,) = team.events()
            assert event.status == "failed" and not event.restarting and "gave up" in event.detail


def test_spawn_checks_everything_before_it_changes_anything(root: Path) -> None:
    cli(root, "team", "create", "t")
    cli(root, "up", "t")
    try:
        before = (root / "teams" / "t" / "config.json").read_bytes()
        cases = {
            ("--cwd", str(root / "nowhere")): "does not exist",
            ("--agent-type", "Reviewer"): "unknown agent type 'Reviewer'; known: general-purpose",
            ("--model", "gpt-4"): "unknown model 'gpt-4'; use offline",
        }
        for extra, message in cases.items():
            err = cli(root, "spawn", "t", "bob", "--prompt", "p", *extra, ok=False).stderr
            assert message in err, err
        env_err = subprocess.run(
            [*AGENTTEAMS, "spawn", "t", "bob", "--prompt", "p", "--model", "sonnet", "--root", str(root)],
            capture_output=True,
            text=True,
            env={k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC")},
        )
        assert "needs ANTHROPIC_API_KEY" in env_err.stderr
        assert (root / "teams" / "t" / "config.json").read_bytes() == before
        assert not (root / "teams" / "t" / "inboxes" / "bob.json").exists()
    finally:
        cli(root, "down", "t")


def test_wakes_from_the_cli_arrive(root: Path) -> None:
    # The fallback poll is a minute: anything quicker came through a doorbell.
    cli(root, "team", "create", "t")
    cli(root, "up", "t", "--fallback-poll", "60")
    try:
        cli(root, "spawn", "t", "alice", "--prompt", "p")
        wait_for(
            lambda: json.loads(cli(root, "status", "t", "--json").stdout)["teammates"][0]["state"] == "idle"
        )
        for _ in range(3):
            started = time.monotonic()
            created = json.loads(
                cli(root, "task", "create", "t", "quick", "--command", "true", "--json").stdout
            )
            wait_for(
                lambda c=created: (
                    json.loads(cli(root, "task", "get", "t", c["id"], "--json").stdout)["status"]
                    == "completed"
                ),
                timeout=20,
            )
            assert time.monotonic() - started < 10
            started = time.monotonic()
            cli(root, "send", "t", "alice", "ping", "--summary", "ping")
            wait_for(
                lambda: "received your message" in cli(root, "inbox", "t", "team-lead", "--unread").stdout,
                timeout=20,
            )
            assert time.monotonic() - started < 10
            cli(root, "inbox", "t", "team-lead")  # (reading marks nothing; the next check looks for new ones)
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "import sys; from ipc import Mailbox; Mailbox(sys.argv[1], 't', 'team-lead').mark_all_read()",
                    str(root),
                ],
                check=True,
            )
    finally:
        cli(root, "down", "t")


# ---------------------------------------------------------------- owners and lock-outs


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
def test_a_closed_terminal_brings_run_down(root: Path, sig: int) -> None:
    path = scenario(root, "slow", [{"key": "a", "subject": "Wait", "command": "sleep 60"}], teammates=1)
    proc = subprocess.Popen(
        [*AGENTTEAMS, "run", str(path), "--root", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    team = Team("slow", root)
    wait_for(lambda: team.is_up() and team.status().teammates and team.ps().teammates[0].children, timeout=30)
    pids = set(team_pids(team))
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip() == "agentteams: interrupted"
    assert wait_for_gone(pids) == []


def test_run_notices_at_once_that_its_supervisor_died(root: Path) -> None:
    path = scenario(root, "orphan", [{"key": "a", "subject": "Wait", "command": "sleep 60"}], teammates=1)
    proc = subprocess.Popen(
        [*AGENTTEAMS, "run", str(path), "--root", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    team = Team("orphan", root)
    wait_for(lambda: team.is_up() and team.status().teammates and team.ps().teammates[0].children, timeout=30)
    pids = set(team_pids(team))
    os.kill(team.supervisor_pid() or 0, signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1 and "supervisor of 'orphan' died" in err and "agentteams up orphan" in err
    assert wait_for_gone(pids) == []


def test_deleting_a_team_that_is_up_stops_its_supervisor(root: Path) -> None:
    cli(root, "team", "create", "t")
    cli(root, "up", "t")
    team = Team("t", root)
    pids = set(team_pids(team))
    cli(root, "team", "delete", "t")
    assert wait_for_gone(pids) == [] and not (root / "teams" / "t").exists()
    assert "does not exist" in cli(root, "down", "t", ok=False).stderr


def test_a_corrupt_config_does_not_lock_the_user_out_of_a_running_team(root: Path) -> None:
    cli(root, "team", "create", "t")
    cli(root, "up", "t")
    cli(root, "spawn", "t", "alice", "--prompt", "p")
    team = Team("t", root)
    pids = set(team_pids(team))
    config = root / "teams" / "t" / "config.json"
    for _ in range(5):  # the supervisor may rewrite the config whole meanwhile (alice going idle)
        config.write_text("{ not json")
        ps, listed = cli(root, "ps"), cli(root, "team", "list")
        if config.read_bytes() == b"{ not json":
            break
        json.loads(config.read_text())  # it was rewritten whole, not left torn
    assert "config.json: not a valid team config" in ps.stderr and "alice" in ps.stdout
    assert "config.json" in listed.stderr  # named, not silently omitted
    cli(root, "down", "t")
    assert wait_for_gone(pids) == []


def test_down_is_stopping_not_removing_and_a_run_continues(root: Path) -> None:
    tasks = [{"key": "a", "subject": "A", "command": "true"}]
    path = scenario(root, "again", tasks, teammates=2)
    cli(root, "run", str(path), "--keep-up")
    members = json.loads(cli(root, "status", "again", "--json").stdout)["teammates"]
    cli(root, "down", "again")
    assert [m["name"] for m in json.loads(cli(root, "team", "list", "--json").stdout)[0]["members"]][1:] == [
        "w-1",
        "w-2",
    ]
    # Members still, shown so while the team is down: they used to vanish from ps and watch.
    (tree,) = json.loads(cli(root, "ps", "again", "--json").stdout)["teams"]
    assert [(m["name"], m["state"], m["pid"]) for m in tree["teammates"]] == [
        ("w-1", "down", None),
        ("w-2", "down", None),
    ]
    assert "w-2                  -  down" in cli(root, "ps", "again").stdout
    assert "w-1 " in cli(root, "watch", "again", "--once").stdout
    up = json.loads(cli(root, "up", "again", "--json").stdout)
    assert up["resumed"] == [m["name"] for m in members]
    cli(root, "down", "again")
    assert (
        "already ran to completion" in cli(root, "run", str(path), ok=False).stderr
    )  # not passed off as new
    fresh = json.loads(cli(root, "run", str(path), "--fresh", "--json").stdout)
    assert fresh["tasks_total"] == 1 and fresh["tasks_completed"] == 1
    assert json.loads(cli(root, "task", "list", "again", "--json").stdout)[0]["id"] == "1"  # started over


# ---------------------------------------------------------------- options and names


def test_root_and_json_work_before_the_subcommand(tmp_path: Path) -> None:
    a, b = tmp_path / "A", tmp_path / "B"
    env = {**os.environ, "AGENTTEAMS_HOME": str(a)}
    out = subprocess.run(
        [*AGENTTEAMS, "--root", str(b), "--json", "team", "create", "x"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0 and json.loads(out.stdout)["name"] == "x"
    assert (b / "teams" / "x").is_dir() and not a.exists()


@pytest.mark.parametrize("name", ["../evil", "élodie", "-x", "--force"])
def test_names_that_would_start_with_a_dash_are_refused(root: Path, name: str) -> None:
    result = subprocess.run(
        [*AGENTTEAMS, "--root", str(root), "team", "create", "--", name], capture_output=True, text=True
    )
    assert (
        result.returncode == 1 and "starts with '-'" in result.stderr and len(result.stderr.splitlines()) == 1
    )
    assert not (root / "teams").exists() or not any((root / "teams").iterdir())


def test_a_name_that_changes_is_said(root: Path) -> None:
    assert "(from 'My Team'" in cli(root, "team", "create", "My Team").stdout


def test_bad_files_and_closed_pipes_are_one_line_or_quiet(root: Path) -> None:
    latin = root / "latin.toml"
    latin.write_bytes(b'[team]\nname = "caf\xe9"\n')
    assert "not UTF-8" in cli(root, "run", str(latin), ok=False).stderr
    assert "is a directory" in cli(root, "run", "/tmp", ok=False).stderr
    cli(root, "team", "create", "t")
    shell = subprocess.run(
        f"{sys.executable} -m supervisor.cli ps --root {root} | head -0",
        shell=True,
        capture_output=True,
        text=True,
    )
    assert shell.stderr == ""


def test_the_smaller_ones(root: Path) -> None:
    cli(root, "team", "create", "t")
    assert (
        "team 't' is not up; start it with 'agentteams up t'"
        in cli(root, "restart", "t", "alice", ok=False).stderr
    )
    assert "id '' is not a task number" in cli(root, "task", "claim", "t", "", "team-lead", ok=False).stderr
    neg = root / "neg.toml"
    neg.write_text('timeout = -5\n[team]\nname = "n"\n[[teammates]]\nname = "w"\n')
    assert "timeout is -5" in cli(root, "run", str(neg), ok=False).stderr
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from ipc import TeamConfigStore; TeamConfigStore(sys.argv[1], 't').add_member('bob')",
            str(root),
        ],
        check=True,
    )
    cli(root, "send", "t", "bob", "-", "--summary", "stdin", stdin="from standard input")
    (root / "note.txt").write_text("from a file")
    cli(root, "send", "t", "bob", "@note.txt", "--summary", "file")
    texts = [m["text"] for m in json.loads(cli(root, "inbox", "t", "bob", "--json").stdout)]
    assert texts == ["from standard input", "from a file"]
    (root / "tasks" / "t" / "7.json").write_text("{ broken")
    err = cli(root, "task", "list", "t").stderr
    assert err.count("7.json") == 1, err


def test_every_error_is_one_of_ours() -> None:
    assert issubclass(Timeout, AgentTeamsError) and issubclass(Timeout, TimeoutError)


# ---------------------------------------------------------------- what people and tools see


def test_teammates_carry_claude_codes_flags_in_their_command_line(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        pid = team.status().teammates[0].pid
        found = subprocess.run(
            "ps -ewwo pid=,args= | grep -- '--agent-id alice@t'", shell=True, capture_output=True, text=True
        ).stdout
        assert str(pid) in found and "--agent-name alice --team-name t" in found


def test_ps_measures_cpu_and_draws_tools_under_their_teammate(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        team.tasks.create("spin", metadata={"command": "timeout 20 sh -c 'while :; do :; done'"})
        wait_for(lambda: any("while" in c.cmdline for c in team.ps().teammates[0].children), timeout=20)

        def spinning() -> dict[str, Any] | None:
            mate: dict[str, Any] = json.loads(cli(root, "ps", "t", "--json").stdout)["teams"][0]["teammates"][
                0
            ]
            loops = [c for c in mate["children"] if "while" in c["cmdline"]]
            return mate if loops and max(c["cpu_percent"] for c in loops) > 10 else None

        mate = wait_for(spinning, timeout=15)
        assert mate["task"]["subject"] == "spin" and mate["state"] == "running"
        text = cli(root, "ps", "t").stdout
        assert re.search(r"^[│ ]   +└─ ", text, re.M), text
        team.shutdown("alice", force=True, grace=0.5)


def test_watch_shows_what_is_going_on_not_the_last_rows_by_id(root: Path) -> None:
    team = Team.create("t", root=root)
    tasks = team.tasks.create_many([(f"task {i}", "", None, None, []) for i in range(150)])
    team.store.add_member("alice")
    team.tasks.claim(tasks[3].id, "alice")
    team.tasks.update(tasks[10].id, status="completed")
    frame = cli(root, "watch", "t", "--once").stdout
    assert "task 3 " in frame and "task 10 " in frame and "in_progress" in frame
    assert "not up" in frame and "None" not in frame
    assert "AGENTTEAMS_TRACE=1" in frame
    widest = max(len(line) for line in frame.splitlines())
    assert widest > 80  # not wrapped at 80 columns when piped


def _tasks_named(tasks: list[Task]) -> list[str]:
    return [t.subject for t in tasks]


def test_team_api_waits_raise_our_timeout(root: Path) -> None:
    team = Team.create("t", root=root)
    with pytest.raises(Timeout):
        team.wait_until(lambda t: False, timeout=0.1)
    assert alive([]) == []
