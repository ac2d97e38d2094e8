"""The runtime with real processes: supervisor, fork server, teammates, ZeroMQ and files."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from ipc.clock import now_ms
from ipc.errors import NotFound, SupervisorError
from ipc.mailbox import Mailbox
from ipc.messaging import send_body
from ipc.schemas import IdleNotification, InboxMessage, ShutdownRequest, parse_body
from supervisor import Team
from supervisor.client.ps import TeamTree
from tests.runtime_helpers import alive, running_team, team_pids, wait_for, wait_for_gone


def build_dag(team: Team, log: Path, n: int = 20) -> dict[str, list[str]]:
    """n tasks; task i (from 5 on) depends on tasks i-4 and i-3. Each appends its id to log.
    Each task is created with its blockers, so no teammate can see it without them."""
    deps: dict[str, list[str]] = {}
    for i in range(1, n + 1):
        blockers = [str(i - 4), str(i - 3)] if i >= 5 else []
        task = team.tasks.create(
            f"step {i}",
            f"append {i} to the log",
            metadata={"command": f"echo {i} >> {log}"},
            blocked_by=blockers,
        )
        deps[task.id] = blockers
    return deps


def run_dag(root: Path, wake: str) -> None:
    log = root / "order.log"
    with running_team(root, wake=wake) as team:
        names = [team.spawn(f"worker-{i}", prompt="Work through the task list.") for i in range(4)]
        deps = build_dag(team, log)
        team.wake("*")
        team.wait_until(lambda t: all(x.status == "completed" for x in t.tasks.list()), timeout=90)
        order = log.read_text().split()
        assert sorted(order, key=int) == [str(i) for i in range(1, 21)], "each task exactly once"
        position = {tid: i for i, tid in enumerate(order)}
        for tid, blockers in deps.items():
            for b in blockers:
                assert position[b] < position[tid], f"#{tid} ran before its blocker #{b}"

        def reports() -> list[InboxMessage]:  # a teammate reports after marking its task done
            found = [m for m in team.inbox("team-lead").history() if m.text.startswith("Completed task #")]
            return found if len(found) >= 20 else []

        assert len(wait_for(reports, timeout=10)) == 20 and {m.from_ for m in reports()} <= set(names)

        def completed_in_idle_notifications() -> bool:
            idles = [
                b
                for m in team.inbox("team-lead").history()
                if isinstance(b := parse_body(m.text), IdleNotification)
            ]
            return {b.completed_task_id for b in idles if b.completed_task_id} == {
                str(i) for i in range(1, 21)
            }

        wait_for(completed_in_idle_notifications, timeout=10)
        tree = team.ps()
        pids = {m.pid for m in tree.teammates if m.pid} | {c.pid for m in tree.teammates for c in m.children}
        for name in names:
            team.shutdown(name)
        assert wait_for_gone(pids) == []
        assert [m.name for m in team.config().members] == ["team-lead"]
        assert {e.name for e in team.events() if e.status == "completed"} == set(names)


def test_four_teammates_work_a_dag_of_20_tasks_with_zmq(root: Path) -> None:
    run_dag(root, "zmq")


def test_poll_mode_runs_the_same_scenario_to_the_same_result(root: Path) -> None:
    run_dag(root, "poll")


def test_a_message_to_an_idle_teammate_arrives_through_the_socket(root: Path) -> None:
    # With the fallback poll at 60 s, a reply within seconds can only come from the doorbell.
    with running_team(root, fallback_poll=60.0) as team:
        team.spawn("alice", prompt="Wait for messages.")
        wait_for(lambda: team.status().teammates[0].state == "idle")
        time.sleep(0.2)
        sent = time.monotonic()
        team.send("alice", "ping", summary="ping")
        reply = wait_for(
            lambda: [m for m in team.inbox("team-lead").unread() if "ping" in m.text], timeout=10
        )
        assert time.monotonic() - sent < 5
        assert reply[0].from_ == "alice" and reply[0].color == "blue"
        assert Mailbox(root, "t", "alice").unread() == []


def test_dm_summary_reaches_the_next_idle_notification(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        team.spawn("bob", prompt="p")
        wait_for(lambda: all(m.state == "idle" for m in team.status().teammates))
        team.send("bob", "hello bob", summary="hi", sender="alice")  # bob auto-replies to alice

        def bob_summary() -> list[str]:
            return [
                b.summary
                for m in team.inbox("team-lead").read()
                if isinstance(b := parse_body(m.text), IdleNotification)
                and b.from_ == "bob"
                and isinstance(b.summary, str)
            ]

        assert wait_for(bob_summary) == ["[to alice] Acknowledged"]


def test_kill_9_of_a_teammate_mid_task_releases_its_task_and_kills_its_tool(root: Path) -> None:
    with running_team(root, restart="never") as team:
        team.spawn("alice", prompt="p")
        task = team.tasks.create("sleep", metadata={"command": "sleep 60"})
        team.wake("*")

        # The tool's process shows the teammate's command line until it has exec'd.
        def running_sleep() -> TeamTree | None:
            tree = team.ps()
            return tree if any("sleep" in c.cmdline for c in tree.teammates[0].children) else None

        tree = wait_for(running_sleep)
        mate = tree.teammates[0]
        tool_pids = [c.pid for c in mate.children]
        os.kill(mate.pid, signal.SIGKILL)
        event = wait_for(lambda: [e for e in team.events() if e.name == "alice"])[0]
        assert event.status == "killed" and event.signal == 9 and event.released_tasks == [task.id]
        assert wait_for_gone(set(tool_pids), timeout=5) == []
        got = team.tasks.get(task.id)
        assert got.status == "pending" and got.owner_name is None
        assert team.member("alice") is None  # restart=never: it has left the team


def test_a_crashed_teammate_is_restarted_and_finishes_the_work(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        marker = root / "second-run"
        task = team.tasks.create(
            "flaky", metadata={"command": f"test -e {marker} || (touch {marker}; sleep 60)"}
        )
        team.wake("*")
        wait_for(marker.exists)  # killed mid-task, not before its command has begun
        pid = wait_for(lambda: (t := team.ps()).teammates[0].children and t.teammates[0].pid)
        os.kill(pid, signal.SIGKILL)
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
        (event,) = team.events()
        assert event.restarting and event.released_tasks == [task.id]
        assert team.status().teammates[0].restarts == 1


def test_a_task_that_kills_whoever_runs_it_fails_instead_of_taking_the_team_down(root: Path) -> None:
    # Each crash handed the task back with no mark, so the next teammate claimed it and died
    # in turn: every teammate ended failed, the task still pending.
    with running_team(root, intensity=3, period=60.0) as team:
        team.spawn("alice", prompt="p")
        team.spawn("bob", prompt="p")
        (root / "poison.sh").write_text("kill -9 $PPID\n")  # the teammate that runs it
        poison = team.tasks.create("poison", metadata={"command": f"sh {root / 'poison.sh'}"})
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(poison.id).failed, timeout=60)
        meta = team.tasks.get(poison.id).meta
        assert meta["runnerCrashes"] == 2 and "died running it 2 times" in meta["lastError"]
        assert "ended with signal 9" in meta["lastError"]
        after = team.tasks.create("after", metadata={"command": "true"})
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(after.id).status == "completed", timeout=60)
        assert all(m.state != "failed" for m in team.status().teammates)
        team.tasks.update(poison.id, status="pending")  # a retry by hand starts the count again
        assert "runnerCrashes" not in team.tasks.get(poison.id).meta


def test_a_crash_loop_ends_in_failed_and_the_control_socket_keeps_answering(root: Path) -> None:
    with running_team(root, intensity=3, period=60.0) as team:
        # A model that passes the spawn's checks but cannot load: the teammate's own one-line
        # reason reaches the caller, and every restart fails the same way.
        with pytest.raises(
            SupervisorError, match="exited during start-up: .*cannot load no_such_module.Model"
        ):
            team.spawn("broken", prompt="p", model="python:no_such_module:Model")
        wait_for(lambda: team.status().teammates[0].state == "failed", timeout=30)
        status = team.status().teammates[0]
        assert status.restarts == 3 and status.pid is None
        assert len(team.events()) == 4 and not team.events()[-1].restarting
        cpu = psutil.Process(team.supervisor_pid()).cpu_times()
        time.sleep(1.0)
        later = psutil.Process(team.supervisor_pid()).cpu_times()
        assert (later.user + later.system) - (cpu.user + cpu.system) < 0.2, "supervisor is busy-looping"
        assert team.member("broken") is not None  # failed members stay until asked


def test_kill_9_of_the_supervisor_leaves_nothing_running(root: Path) -> None:
    team = Team.create("t", root=root, cwd=str(root))
    team.up()
    try:
        for i in range(3):
            team.spawn(f"w{i}", prompt="p")
        team.tasks.create("sleep", metadata={"command": "sleep 60"})
        team.wake("*")
        wait_for(lambda: any(m.children for m in team.ps().teammates))
        pids = team_pids(team)
        sup = team.supervisor_pid()
        assert sup is not None and len(pids) >= 6  # supervisor, fork server, 3 teammates, a tool
        os.kill(sup, signal.SIGKILL)
        assert wait_for_gone(set(pids), timeout=5) == []
    finally:
        team.down()
        for pid in alive(team_pids(team)):
            os.kill(pid, signal.SIGKILL)


def test_resume_after_supervisor_death_delivers_unread_messages_and_finishes_tasks(root: Path) -> None:
    team = Team.create("t", root=root, cwd=str(root))
    team.up()
    try:
        team.spawn("alice", prompt="p")
        old_pid = team.status().teammates[0].pid or 0
        os.kill(team.supervisor_pid() or 0, signal.SIGKILL)
        wait_for(lambda: team.supervisor_pid() is None)
        assert wait_for_gone({old_pid}, timeout=5) == []
        # While the team is down, work and a message arrive: stored on disk only.
        task = team.tasks.create("after", metadata={"command": "true"})
        team.send("alice", "are you there?", summary="question")
        team.up()  # resume: members in config.json are started again
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
        wait_for(lambda: [m for m in team.inbox("team-lead").read() if "are you there" in m.text], timeout=10)
    finally:
        pids = team_pids(team) if team.is_up() else []
        team.down()
        assert wait_for_gone(set(pids)) == []


def test_a_stale_shutdown_request_does_not_stop_a_respawned_teammate(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        incarnation = team.status().teammates[0].incarnation
        stale = ShutdownRequest(
            request_id=f"shutdown-{incarnation - 1000}@alice", from_="team-lead", reason="old", timestamp="x"
        )
        send_body(root, "t", "team-lead", "alice", stale)
        team.wake("alice")
        wait_for(lambda: Mailbox(root, "t", "alice").unread() == [])
        time.sleep(0.5)
        assert team.status().teammates[0].state in ("idle", "running")
        fresh = ShutdownRequest(
            request_id=f"shutdown-{now_ms()}@alice", from_="team-lead", reason="now", timestamp="x"
        )
        assert fresh.request_id > stale.request_id


def test_force_shutdown_stops_a_teammate_busy_in_a_tool(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        team.tasks.create("busy", metadata={"command": "sleep 60"})
        team.wake("*")
        tools = wait_for(lambda: team.ps().teammates[0].children)
        with pytest.raises(SupervisorError, match="did not answer"):
            team.shutdown("alice", grace=0.5)
        result = team.shutdown("alice", force=True, grace=0.5)
        assert result.stopped is True
        assert wait_for_gone({c.pid for c in tools}, timeout=5) == []
        assert team.member("alice") is None


def test_unknown_teammate_errors_name_the_members(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        with pytest.raises(NotFound, match="'zed' is not a member of team 't'; members: team-lead, alice"):
            team.shutdown("zed")


def test_ps_keeps_cpu_readings_only_for_processes_it_still_shows(root: Path) -> None:
    from supervisor.client import ps

    with running_team(root) as team:
        team.spawn("alice", prompt="p")
        first = wait_for(lambda: team.status().teammates[0].pid)
        ps.snapshot(str(root), "t")  # what `agentteams ps` and each `watch` refresh call
        assert first in ps._procs
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: (pid := team.status().teammates[0].pid) and pid != first and pid)
        ps.snapshot(str(root), "t")
        assert first not in ps._procs
        assert team.supervisor_pid() in ps._procs
