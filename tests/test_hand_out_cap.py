"""A large team on a small host: the supervisor keeps only a few CPU-bound turns going at once
(the rest wait in its queue, and teammates' polls leave them there), its teammates run one
step below it in priority, and a spawn writes the team's config once, not three times."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import cast

import psutil
import pytest

from agentproc.channel import TASKS_SETTLE
from ipc import link
from ipc.config import TeamConfigStore
from ipc.errors import NotFound
from ipc.poller import close_context, context
from ipc.tasks import TaskList
from ipc.wake import QUEUED, Waker, queued
from supervisor.daemon.reactor import Reactor
from supervisor.daemon.router import CPU_TURNS_ENV, Roster, Router, TurnCap, turn_caps
from tests.runtime_helpers import running_team, wait_for


def test_with_a_cap_of_two_three_tasks_into_three_idle_teammates_run_two_at_a_time(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CPU_TURNS_ENV, "2")  # the supervisor started below inherits it
    with running_team(root) as team:
        for name in ("a", "b", "c"):
            team.spawn(name, prompt="")
        wait_for(lambda: [m.state for m in team.status().teammates] == ["idle"] * 3, 20)
        sup = psutil.Process(team.supervisor_pid())
        for member in team.status().teammates:  # one step below the supervisor
            assert member.pid is not None and psutil.Process(member.pid).nice() == sup.nice() + 1

        most, done = 0, threading.Event()

        def watch() -> None:
            nonlocal most
            while not done.is_set():
                most = max(most, sum(t.status == "in_progress" for t in team.tasks.list()))
                done.wait(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            for i in range(3):
                team.tasks.create(f"slow {i}", metadata={"command": "sleep 0.4"})
            finished = wait_for(lambda: all(t.status == "completed" for t in team.tasks.list()), 30)
        finally:
            done.set()
            watcher.join()
        assert finished
        assert most == 2  # two at once, never three (and the third did run)
        assert not queued(Path(team.status().runtime))  # nothing waits once all are handed out


def test_the_cap_is_a_few_turns_per_core_for_an_offline_model_and_many_for_an_api() -> None:
    offline, api = turn_caps()[True], turn_caps()[False]
    cores = os.cpu_count() or 1
    assert offline.computing >= cores and offline.in_all >= 2 * offline.computing
    assert api.computing == api.in_all >= 16 * offline.in_all


def test_several_members_change_in_one_write_and_one_gone_is_skipped(tmp_path: Path) -> None:
    store = TeamConfigStore(tmp_path, "t")
    store.create()
    store.add_member("a", verify_key="key-a")
    store.add_member("b")
    assert store.require_member("a").verify_key == "key-a"
    before = store.path.stat().st_mtime_ns
    updated = store.update_members(
        {"a": {"tmux_pane_id": "process:1", "is_active": True}, "b": {"is_active": True}, "gone": {}}
    )
    assert [m.name for m in updated] == ["a", "b"] and store.path.stat().st_mtime_ns != before
    assert store.require_member("a").tmux_pane_id == "process:1" and store.require_member("b").is_active
    with pytest.raises(NotFound, match="'gone' is not a member of team 't'"):
        store.update_members({"gone": {"is_active": True}})


@pytest.mark.heavy
def test_a_poll_leaves_tasks_to_the_hand_out_while_it_queues_and_finds_an_untold_one_after(
    root: Path,
) -> None:
    with running_team(root, fallback_poll=0.2) as team:
        team.spawn("alice", prompt="")
        wait_for(lambda: [m.state for m in team.status().teammates] == ["idle"], 20)
        flag = Path(team.status().runtime) / QUEUED
        flag.write_bytes(b"1")  # as if the supervisor held tasks back for its hand-out
        untold = TaskList(root, "t")  # a peer that writes a task and tells no one
        task = untold.create("found by a poll")
        time.sleep(3 * TASKS_SETTLE)  # many polls, the list long settled: still left alone
        assert untold.get(task.id).status == "pending"
        flag.write_bytes(b" ")  # the supervisor's queue is empty: the next poll takes it
        assert wait_for(lambda: untold.get(task.id).status == "completed", 20)


def test_a_task_held_back_only_by_a_wake_that_came_to_nothing_is_handed_out_once_it_lapses(
    tmp_path: Path,
) -> None:
    ctx = context()
    waker = Waker(tmp_path, ctx=ctx)
    reactor = Reactor()
    router = Router(reactor, ctx, tmp_path, waker)
    router.roster = cast(Roster, IdleRoster())
    router.caps = {True: TurnCap(1, 1), False: TurnCap(1, 1)}
    router.hand_out = lambda pairs: pairs  # every pair claimed
    router.open("bee")
    bee = link.AgentLink(ctx, tmp_path, "bee")
    try:
        bee.send(link.Hello(agent="bee", pid=1))  # connected both ways first
        wait_for(lambda: router.links.receive(), 5)
        router.claiming["ann"] = time.monotonic()  # rung for a task, took none, says nothing
        assert router.route_tasks(["7"]) == [] and list(router.ready) == ["7"]
        frames: list[link.Frame] = []

        def handed() -> bool:
            reactor.run_once(0.1)
            frames.extend(bee.receive())
            return any(isinstance(f, link.Wake) and f.task == "7" for f in frames)

        assert wait_for(handed, 10)  # after the claim window, not never
        assert not router.ready
    finally:
        bee.close()
        router.close()
        waker.close()
        reactor.close()
        close_context(ctx)


class IdleRoster:
    def idle(self) -> list[object]:
        return [type("Named", (), {"name": "bee"})()]

    def is_idle(self, name: str) -> bool:
        return name == "bee"

    def on_hello(self, name: str) -> None:
        pass

    def on_state(self, name: str, state: str, task: str) -> None:
        pass
