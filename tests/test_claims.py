"""Claims under load: a teammate whose lock wait times out looks again rather than exits."""

from __future__ import annotations

from pathlib import Path

import pytest

from ipc.locks import locked
from ipc.paths import TeamPaths
from ipc.schemas import Task, dump_json
from ipc.storage import atomic_write
from tests.runtime_helpers import running_team, wait_for


def test_a_lock_wait_that_times_out_is_tried_again_and_the_task_is_done(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTTEAMS_LOCK_TIMEOUT", "0.2")  # the teammate's waits end soon
    with running_team(root) as team:
        team.spawn("alice", prompt="Work through the task list.")
        wait_for(lambda: (m := team.status().teammate("alice")) is not None and m.state == "idle", timeout=30)
        pid = team.status().teammate("alice").pid  # type: ignore[union-attr]
        paths = TeamPaths(root, team.name)
        log = paths.log("alice")
        with locked(paths.tasks_lock, root=paths.root, timeout=None):
            # Written beside the held lock (as a peer that ignores it would): alice sees a
            # claimable task, and cannot take the lock to claim it.
            task = Task(
                id="1", subject="wait for it", description="", status="pending", blocks=[], blocked_by=[]
            )
            atomic_write(paths.task("1"), dump_json(task))
            team.wake("alice")
            wait_for(lambda: log.exists() and "looking again shortly" in log.read_text(), timeout=30)
            assert team.tasks.get("1").status == "pending"
        team.wake("alice")  # cuts its back-off short
        done = wait_for(lambda: (t := team.tasks.get("1")).status == "completed" and t, timeout=30)
        assert done.owner == "alice"
        alice = team.status().teammate("alice")
        assert alice is not None and alice.pid == pid and alice.restarts == 0, "it waited; it did not exit"
