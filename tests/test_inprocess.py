"""The in-process backend: teammates as threads of one host process per team. A DAG done by
three of them; one that raises is restarted alone; a hung tool is killed without the others;
the host's death is a restart of its teammates in a new host."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import psutil

from supervisor import Team
from tests.runtime_helpers import alive, cli, processes_under, running_team, wait_for


def host_of(team: Team) -> int:
    handles = {m.tmux_pane_id for m in team.config().teammates()}
    assert len(handles) == 1, handles
    handle = handles.pop()
    assert handle.startswith("in-process:"), handle
    return int(handle.split(":")[1])


def test_three_in_process_teammates_work_a_dag_in_one_host(root: Path) -> None:
    log = root / "order.log"
    with running_team(root, teammate_mode="in-process") as team:
        for name in ("ann", "ben", "cat"):
            team.spawn(name, prompt="Work through the task list.")
        host = host_of(team)
        assert psutil.Process(host).name() == "at-host"
        assert [t.backend for t in team.status().teammates] == ["in-process"] * 3
        ids: list[str] = []
        for i in range(1, 10):
            blockers = [ids[i - 4]] if i >= 4 else []
            ids.append(
                team.tasks.create(
                    f"step {i}", "log it", metadata={"command": f"echo {i} >> {log}"}, blocked_by=blockers
                ).id
            )
        team.wake("*")
        team.wait_until(lambda t: all(x.status == "completed" for x in t.tasks.list()), timeout=90)
        order = log.read_text().split()
        assert sorted(order, key=int) == [str(i) for i in range(1, 10)], "each task once"
        for i in range(4, 10):
            assert order.index(str(i - 3)) < order.index(str(i)), "after its blocker"
        assert host_of(team) == host, "one host all along"
        assert cli(root, "ps", "t").returncode == 0
        assert team.shutdown("ann").stopped
        assert [m.name for m in team.config().teammates()] == ["ben", "cat"]
    wait_for(lambda: not alive([host]))


def test_a_teammate_that_raises_is_restarted_alone_and_the_host_goes_on(root: Path) -> None:
    with running_team(root, teammate_mode="in-process") as team:
        team.spawn("ann", prompt="Work.")
        team.spawn("ben", prompt="Work.")
        host = host_of(team)
        inbox = team.paths.inbox("ben")
        inbox.unlink()
        inbox.mkdir()  # ben's next read of its inbox raises
        team.wake("ben")

        def ben_failed() -> bool:
            ben = team.status().teammate("ben")
            return ben is not None and ben.state == "failed"

        wait_for(ben_failed, timeout=60)
        assert team.status().teammate("ben").restarts >= 1  # type: ignore[union-attr]
        assert alive([host]) and host_of(team) == host, "the host went on"
        task = team.tasks.create("still working", "ann works", metadata={"command": "echo ok"}, owner="ann")
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
        inbox.rmdir()
        team.restart("ben")
        wait_for(lambda: team.status().teammate("ben").state in ("running", "idle"))  # type: ignore[union-attr]


def test_a_hung_tool_is_killed_without_the_others(root: Path) -> None:
    with running_team(root, teammate_mode="in-process") as team:
        team.spawn("ann", prompt="Work.")
        team.spawn("ben", prompt="Work.")
        # Ann's from its creation: ben cannot take it.
        hang = team.tasks.create(
            "hang", "sleep", metadata={"command": "sleep 600; echo hung-tool-marker"}, owner="ann"
        )

        def sleeper() -> list[int]:
            found = []
            for p in psutil.process_iter(["pid", "cmdline"]):
                if "hung-tool-marker" in " ".join(p.info["cmdline"] or []):
                    found.append(p.info["pid"])
                    found += [c.pid for c in p.children(recursive=True)]
            return found if len(found) > 1 else []  # the shell and its sleep

        pids = wait_for(sleeper, timeout=30)
        # Given up on: a task released by a stopped teammate is anyone's to run again, as a
        # process teammate's is; this one is not to be run by ben.
        team.tasks.delete(hang.id)
        team.shutdown("ann", force=True, grace=1)
        wait_for(lambda: not alive(pids), timeout=20)
        task = team.tasks.create("after", "ben works", metadata={"command": "echo ok"}, owner="ben")
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
        assert [m.name for m in team.config().teammates()] == ["ben"]


def marked(marker: str) -> list[int]:
    """The shell running a command with ``marker`` and its children, once both run."""
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        if marker in " ".join(p.info["cmdline"] or []):
            found.append(p.info["pid"])
            found += [c.pid for c in p.children(recursive=True)]
    return found if len(found) > 1 else []


def test_stopped_in_a_command_its_task_goes_back_unfailed_as_a_process_teammates_does(root: Path) -> None:
    with running_team(root, teammate_mode="in-process") as team:
        team.spawn("ann", prompt="Work.")
        task = team.tasks.create(
            "slow", "wait", metadata={"command": "sleep 600; echo stop-marker"}, owner="ann"
        )
        tools = wait_for(lambda: marked("stop-marker"), timeout=30)
    assert not alive(tools)
    after = team.tasks.get(task.id)
    assert after.status == "pending" and not after.failed, after
    told = [m.text for m in team.inbox("team-lead").read()]
    assert not any("failed" in text for text in told), told


def test_logs_of_an_in_process_teammate_are_its_lines_of_the_hosts_log(root: Path) -> None:
    with running_team(root, teammate_mode="in-process") as team:
        team.spawn("ann", prompt="Work.")
        team.spawn("ben", prompt="Work.")
        team.tasks.create("hang", "sleep", metadata={"command": "sleep 600; echo log-marker"}, owner="ann")
        wait_for(lambda: marked("log-marker"), timeout=30)  # in its Bash call
        team.shutdown("ann", force=True, grace=1)  # the host logs that ann's turn ended there
        shown = wait_for(
            lambda: "stopped during Bash" in (out := cli(root, "logs", "t", "ann").stdout) and out
        )
        assert all(" ann " in line for line in shown.splitlines() if line[:2] == "20"), shown
        assert "stopped during" not in cli(root, "logs", "t", "ben", ok=None).stdout


def test_kill_9_of_the_supervisor_takes_the_hosts_tools_too(root: Path) -> None:
    team = Team.create("t", root=root, cwd=str(root))
    supervisor = team.up(teammate_mode="in-process")
    team.spawn("ann", prompt="Work.")
    team.tasks.create("slow", "wait", metadata={"command": "sleep 600; echo orphan-marker"}, owner="ann")
    tools = wait_for(lambda: marked("orphan-marker"), timeout=30)
    host = host_of(team)
    os.kill(supervisor, signal.SIGKILL)
    wait_for(lambda: not alive([host, *tools]), timeout=20)
    wait_for(lambda: not processes_under(root), timeout=20)


def test_kill_9_of_the_host_restarts_its_teammates_in_a_new_host(root: Path) -> None:
    with running_team(root, teammate_mode="in-process") as team:
        team.spawn("ann", prompt="Work.")
        team.spawn("ben", prompt="Work.")
        host = host_of(team)
        os.kill(host, signal.SIGKILL)

        def new_host() -> bool:
            handles = {m.tmux_pane_id for m in team.config().teammates()}
            states = {t.state for t in team.status().teammates}
            return handles != {f"in-process:{host}"} and states <= {"running", "idle"}

        wait_for(new_host, timeout=30)
        assert host_of(team) != host and not alive([host])
        assert all(t.restarts == 1 for t in team.status().teammates)
        task = team.tasks.create("after", "work", metadata={"command": "echo ok"})
        team.wake("*")
        team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
        new = host_of(team)
    wait_for(lambda: not alive([new]))
