"""An in-process teammate's tools end with it, as a process teammate's end with its session:
also a job a command put in a process group of its own (``set -m; … &``), and never the
tools of another teammate of the same host."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from supervisor import Team
from tests.runtime_helpers import alive, running_team, wait_for
from tests.test_inprocess import host_of, marked


def job(marker: str) -> str:
    """A command that leaves a job-controlled sleep running after it exits."""
    return f"set -m; bash -c 'sleep 600; echo {marker}' >/dev/null 2>&1 & echo started"


def start_job(team: Team, name: str, marker: str) -> list[int]:
    task = team.tasks.create(f"job of {name}", "start it", metadata={"command": job(marker)}, owner=name)
    team.wait_until(lambda t: t.tasks.get(task.id).status == "completed", timeout=30)
    pids: list[int] = wait_for(lambda: marked(marker), timeout=30)
    assert os.getpgid(pids[0]) == pids[0], "the job is a process group of its own"
    return pids


def test_a_shutdown_ends_its_jobs_and_no_one_elses(root: Path) -> None:
    with running_team(root, teammate_mode="in-process") as team:
        team.spawn("ann", prompt="Work.")
        team.spawn("ben", prompt="Work.")
        anns = start_job(team, "ann", "ann-job-marker")
        bens = start_job(team, "ben", "ben-job-marker")
        supervisor, host = team.status().supervisor, host_of(team)
        assert team.shutdown("ann").stopped
        wait_for(lambda: not alive(anns), timeout=20)
        assert alive(bens) == bens, "ben's job is ben's"
        assert alive([supervisor, host]) == [supervisor, host]
    assert not alive(bens), "down ends it"


def test_a_forced_stop_ends_its_jobs(root: Path) -> None:
    with running_team(root, teammate_mode="in-process") as team:
        team.spawn("ann", prompt="Work.")
        pids = start_job(team, "ann", "forced-job-marker")
        team.shutdown("ann", force=True, grace=1)
        wait_for(lambda: not alive(pids), timeout=20)


def test_a_crash_ends_its_jobs_before_its_restart(root: Path) -> None:
    with running_team(root, teammate_mode="in-process") as team:
        team.spawn("ann", prompt="Work.")
        pids = start_job(team, "ann", "crash-job-marker")
        inbox = team.paths.inbox("ann")
        inbox.unlink()
        inbox.mkdir()  # ann's next read of its inbox raises: its thread ends, the host goes on
        team.wake("ann")
        wait_for(lambda: not alive(pids), timeout=30)
        inbox.rmdir()


def test_the_hosts_death_ends_its_jobs(root: Path) -> None:
    with running_team(root, teammate_mode="in-process") as team:
        team.spawn("ann", prompt="Work.")
        pids = start_job(team, "ann", "orphan-job-marker")
        os.kill(host_of(team), signal.SIGKILL)
        wait_for(lambda: not alive(pids), timeout=20)


def test_down_ends_its_jobs(root: Path) -> None:
    team = Team.create("t", root=root, cwd=str(root))
    team.up(teammate_mode="in-process")
    try:
        team.spawn("ann", prompt="Work.")
        pids = start_job(team, "ann", "down-job-marker")
    finally:
        team.down(grace=2)
    wait_for(lambda: not alive(pids), timeout=20)
