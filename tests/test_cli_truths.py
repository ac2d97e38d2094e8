"""What a user reaches for and what the command line says, each as a user met it: logs,
fixing a task from the command line, refusals instead of silent guesses, readable output."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from ipc import operations as io
from ipc.errors import Conflict
from ipc.osproc import command_line_args
from ipc.paths import TeamPaths, remove_runtime_dirs
from ipc.schemas import ShutdownRequest, body_text
from ipc.wake import reply_socket_path, socket_files, socket_path
from supervisor import Team
from supervisor.client import operations as ops
from tests.runtime_helpers import AGENTTEAMS, cli, running_team, wait_for


def jcli(root: Path, *args: str) -> object:
    return json.loads(cli(root, *args, "--json").stdout)


# ---------------------------------------------------------------- fixing a task


def test_a_failed_task_with_a_wrong_command_is_fixed_from_the_command_line(root: Path) -> None:
    cli(root, "team", "create", "t")
    cli(root, "task", "create", "t", "Make", "--command", "true")
    cli(root, "task", "create", "t", "Use", "--command", "exit 1", "--blocked-by", "1")
    fixed = jcli(root, "task", "update", "t", "2", "--command", "echo fixed", "--remove-blocked-by", "1")
    assert isinstance(fixed, dict)
    assert fixed["metadata"] == {"command": "echo fixed"} and fixed["blockedBy"] == []
    first = jcli(root, "task", "get", "t", "1")
    assert isinstance(first, dict) and first["blocks"] == []
    cli(root, "task", "update", "t", "1", "--add-blocks", "2")
    cli(root, "task", "update", "t", "1", "--remove-blocks", "2")
    second = jcli(root, "task", "get", "t", "2")
    assert isinstance(second, dict) and second["blockedBy"] == []
    err = cli(root, "task", "update", "t", "2", "--remove-blocked-by", "1", ok=False).stderr
    assert "task #2 is not blocked by #1" in err
    helped = jcli(root, "task", "update", "t", "2", "--subagent", "Run `echo fixed`", "--command", "")
    assert isinstance(helped, dict) and helped["metadata"] == {"subagent": "Run `echo fixed`"}
    alone = jcli(root, "task", "update", "t", "2", "--subagent", "")
    assert isinstance(alone, dict) and "metadata" not in alone  # the last key removed: none left


def test_removing_a_dependency_is_an_operation_of_the_table(root: Path) -> None:
    team = Team.create("t", root=root)
    a, b = team.tasks.create("a"), team.tasks.create("b", blocked_by=[team.tasks.list()[0].id])
    changed = ops.task_update(team, io.TaskUpdate(id=b.id, remove_blocked_by=[a.id]))
    assert changed.task is not None and changed.task.blocked_by == [] and changed.unblocked == [b.id]
    properties = io.schema(io.TaskUpdate)["properties"]
    assert "remove_blocked_by" in properties and "remove_blocks" in properties


# ---------------------------------------------------------------- logs


def test_logs_show_the_supervisor_and_a_teammate_and_follow(root: Path) -> None:
    cli(root, "team", "create", "t")
    cli(root, "up", "t")
    try:
        cli(root, "spawn", "t", "alice", "--prompt", "p")
        supervisor = cli(root, "logs", "t").stdout
        assert "started alice pid" in supervisor
        cli(root, "logs", "t", "alice")  # what its process printed (an offline teammate, nothing)
        assert (
            "'bob' is not a member of team 't'; members: team-lead, alice"
            in cli(root, "logs", "t", "bob", ok=False).stderr
        )
        follow = subprocess.Popen(
            [*AGENTTEAMS, "logs", "t", "-f", "--root", str(root)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert follow.stdout is not None
            cli(root, "spawn", "t", "bob", "--prompt", "p")
            deadline = time.monotonic() + 20
            seen = ""
            while "started bob" not in seen and time.monotonic() < deadline:
                seen += follow.stdout.readline()
            assert "started bob" in seen
        finally:
            follow.send_signal(signal.SIGINT)
            follow.communicate(timeout=10)  # read what is left: a full pipe would hold its exit
            assert follow.returncode == 130
    finally:
        cli(root, "down", "t")


# ---------------------------------------------------------------- runtime directories


def test_deleting_a_team_removes_its_runtime_directory(root: Path) -> None:
    team = Team.create("t", root=root)
    team.up()
    runtime = team.paths.runtime_dir()
    assert runtime.is_dir()
    team.delete()
    assert not runtime.exists()
    cli(root, "team", "create", "u")
    cli(root, "up", "u")
    runtime = TeamPaths(root, "u").runtime_dir()
    cli(root, "team", "delete", "u")
    assert not runtime.exists()


def test_a_whole_root_removed_takes_its_teams_runtime_directories(tmp_path: Path) -> None:
    ours, other = TeamPaths(tmp_path / "scratch" / "r", "t"), TeamPaths(tmp_path / "kept", "t")
    made = [ours.runtime_dir(), other.runtime_dir()]
    remove_runtime_dirs(tmp_path / "scratch")
    assert not made[0].exists() and made[1].is_dir()


def test_looking_at_a_team_that_is_not_up_makes_no_runtime_directory(root: Path) -> None:
    cli(root, "team", "create", "t")
    for args in (("status", "t"), ("down", "t"), ("ps", "t"), ("shutdown", "t", "x")):
        cli(root, *args, ok=None)
    assert not TeamPaths(root, "t").runtime_path().exists()


# ---------------------------------------------------------------- refusals, not guesses


def test_a_budget_must_be_a_finite_number(root: Path) -> None:
    cli(root, "team", "create", "t")
    for value in ("nan", "inf", "-inf"):
        err = cli(root, "budget", "t", f"--budget-usd={value}", ok=False).stderr
        assert "a dollar budget must be a positive number" in err
    assert "no dollar limit" in cli(root, "budget", "t").stdout


def test_a_wrong_supervisor_option_is_named_as_it_was_typed(root: Path) -> None:
    cli(root, "team", "create", "t")
    for option, value, said in (
        ("--intensity", "-1", "--intensity -1: give the restarts allowed per period, 0 or more"),
        ("--period", "0", "--period 0: give a number of seconds above 0"),
        ("--fallback-poll", "nan", "--fallback-poll nan: give a number of seconds above 0"),
    ):
        err = cli(root, "up", "t", option, value, ok=False).stderr
        assert err.strip() == f"agentteams: error: {said}", err
    assert not Team("t", root=root).is_up()


def test_a_host_for_a_team_of_files_is_refused_not_ignored(root: Path) -> None:
    with running_team(root) as team:
        err = cli(root, "spawn", "t", "ann", "--prompt", "p", "--host", "elsewhere", ok=False).stderr
        assert "team 't' is not on an engine, so it has no host 'elsewhere'" in err, err
        assert team.config().teammates() == []


def test_a_team_with_teammates_is_deleted_after_down_only_with_force(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("ann", prompt="p")
    err = cli(root, "team", "delete", "t", ok=False).stderr
    assert "still has 1 teammate(s): ann" in err and "delete them with it: --force" in err, err
    cli(root, "team", "delete", "t", "--force")
    assert not (root / "teams" / "t").exists()


def test_watch_ends_when_its_team_is_deleted(root: Path) -> None:
    cli(root, "team", "create", "t")
    master, slave = os.openpty()  # a terminal: the live view draws its frames
    watch = subprocess.Popen(
        [*AGENTTEAMS, "watch", "t", "--root", str(root)], stdout=slave, stderr=subprocess.PIPE, text=True
    )
    os.close(slave)
    try:
        # Its first frame, of a team that is not up, shows first.
        assert select.select([master], [], [], 20)[0] and os.read(master, 1)
        cli(root, "team", "delete", "t")
        _, err = watch.communicate(timeout=20)  # it used to go on advising 'agentteams up t'
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
        os.close(master)
    assert watch.returncode == 0 and "team 't' was deleted; the view ends" in err, err


def test_an_empty_or_wrong_root_is_refused(root: Path, tmp_path: Path) -> None:
    out = subprocess.run([*AGENTTEAMS, "team", "list", "--root", ""], capture_output=True, text=True)
    assert out.returncode == 1 and "--root is empty" in out.stderr
    file = tmp_path / "a-file"
    file.write_text("x")
    out = subprocess.run([*AGENTTEAMS, "ps", "--root", str(file)], capture_output=True, text=True)
    assert out.returncode == 1 and f"--root {file} is not a directory" in out.stderr


def test_spawning_a_taken_name_is_refused_unless_asked_to_rename(root: Path) -> None:
    with running_team(root) as team:
        cli(root, "spawn", "t", "alice", "--prompt", "p")
        err = cli(root, "spawn", "t", "alice", "--prompt", "p", ok=False).stderr
        assert "'alice' is already a member of team 't'" in err and "--rename" in err
        assert [m.name for m in team.config().teammates()] == ["alice"]
        renamed = jcli(root, "spawn", "t", "alice", "--prompt", "p", "--rename")
        assert isinstance(renamed, dict) and renamed["name"] == "alice-2"
        with pytest.raises(Conflict, match="already a member"):
            team.spawn("alice", prompt="p")
        assert team.spawn("alice", prompt="p", rename=True) == "alice-3"
        for name in ("alice", "alice-2", "alice-3"):
            team.shutdown(name, force=True, grace=1)


# ---------------------------------------------------------------- what people read


def test_inbox_shows_protocol_messages_in_words_and_task_get_is_text(root: Path) -> None:
    cli(root, "team", "create", "t")
    team = Team.open("t", root=root)
    team.store.add_member("alice")
    request = ShutdownRequest(
        request_id="shutdown-1@alice",
        from_="team-lead",
        reason="done for today",
        timestamp="2026-01-01T00:00:00Z",
    )
    team.inbox("alice").append(sender="team-lead", text=body_text(request))
    shown = cli(root, "inbox", "t", "alice").stdout
    assert "[shutdown request] team-lead asks you to shut down: done for today" in shown
    assert '"type"' not in shown
    cli(root, "task", "create", "t", "Count", "--command", "wc -l x")
    text = cli(root, "task", "get", "t", "1").stdout
    assert text.startswith("#1 Count") and "command: wc -l x" in text and "{" not in text
    assert jcli(root, "task", "get", "t", "1") == json.loads(
        cli(root, "task", "get", "t", "1", "--json").stdout
    )


def test_up_on_a_running_team_says_what_would_help(root: Path) -> None:
    cli(root, "team", "create", "t")
    cli(root, "up", "t")
    try:
        err = cli(root, "up", "t", "--wake", "poll", ok=False).stderr
        assert "already up" in err and "budget" not in err and "agentteams down t" in err
        err = cli(root, "up", "t", "--budget-tokens", "100", ok=False).stderr
        assert "agentteams budget t" in err
    finally:
        cli(root, "down", "t")


def test_a_teammate_that_leaves_by_the_protocol_is_not_logged_as_unexpected(root: Path) -> None:
    # Its exit is reaped at once; the approval in the lead's inbox is read later (here on the
    # 500 ms poll; with a lead agent running, the lead may take it first).
    with running_team(root, wake="poll") as team:
        team.spawn("alice", prompt="")
        wait_for(lambda: team.status().teammates[0].state == "idle")
        team.shutdown("alice")
        log = (team.paths.runtime_dir() / "supervisor.log").read_text()
        assert "alice pid" in log and "unexpectedly" not in log, log


def test_down_leaves_no_socket_file_of_a_teammate_stopped_in_a_command(root: Path) -> None:
    # A teammate in a command is stopped by SIGTERM: it never closes its doorbell itself.
    with running_team(root) as team:
        team.spawn("alice", prompt="")
        wait_for(lambda: team.status().teammates[0].state == "idle")
        runtime = team.paths.runtime_dir()
        bell = socket_path(runtime, "alice")
        assert bell.exists()
        # What a claude teammate killed with its claude would leave too (its files stand
        # in for them): claude's own socket and the courier's reply addresses. Another
        # agent's reply address is not alice's to remove.
        claudes = [
            socket_path(runtime, "alice", "m"),
            *(reply_socket_path(runtime, "alice", s) for s in "ab"),
        ]
        others = reply_socket_path(runtime, "bob", "alice")
        for path in (*claudes, others):
            path.touch()
        team.tasks.create("slow", metadata={"command": "sleep 30"})
        wait_for(lambda: team.status().teammates[0].state == "running")
    log = (runtime / "supervisor.log").read_text()
    assert "alice pid" in log and "(exit 143)" in log and not bell.exists()
    assert not any(path.exists() for path in claudes) and others.exists()
    assert socket_files(runtime, "bob") == [*(socket_path(runtime, "bob", k) for k in "wcm"), others]


def test_ps_shows_whole_command_lines(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="")
        report = json.loads(cli(root, "ps", "t", "--json").stdout)["teams"][0]
        for kind in ("supervisor", "forkserver"):
            shown = report[kind]
            whole = " ".join(command_line_args(psutil.Process(shown["pid"]).cmdline()))
            assert shown["cmdline"] == whole, kind
        assert len(report["supervisor"]["cmdline"]) > 300  # where it was cut before


def test_an_unknown_option_points_to_its_own_commands_help(root: Path) -> None:
    for args, helped in (
        (("task", "list", "t", "--status", "bogus"), "agentteams task list --help"),
        (("budget", "t", "--usd", "abc"), "agentteams budget --help"),
        (("summary", "t", "members"), "agentteams summary --help"),
    ):
        err = cli(root, *args, ok=False).stderr
        assert err.startswith("agentteams: error: unrecognized arguments: ") and f"(see '{helped}')" in err, (
            err
        )
