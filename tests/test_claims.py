"""Claims that scale: task files rewritten in place (and a kill mid-write leaves them whole),
the supervisor handing out claims and the on-call teammate rung by a creator, and a teammate
whose lock wait times out looking again rather than exiting."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq
from msgspec import UNSET

from ipc import TaskList, link
from ipc.errors import InvalidInput, LockTimeout, NotFound
from ipc.locks import locked
from ipc.operations import TaskCreate
from ipc.paths import TeamPaths
from ipc.schemas import Task, dump_json
from ipc.storage import atomic_write
from ipc.wake import ON_CALL, WakeListener, Waker, on_call
from supervisor.client.handle import TeamHandle
from supervisor.client.operations import task_create
from supervisor.daemon.router import Router, TurnCap
from tests.router_helpers import Roster, frames_to, routing, said
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


# ---------------------------------------------------------------- in-place task writes


def _rewriter(root: Path, team: str, seed: int) -> None:
    """Child: claim, release and complete tasks for ever, each file shrinking and growing."""
    rng = random.Random(seed)
    tl = TaskList(root, team)
    while True:
        task_id = str(rng.randint(1, 6))
        if rng.random() < 0.5:
            tl.claim(task_id, rng.choice(("alice", "bob")))
        else:
            note = "x" * rng.randint(0, 600)
            tl.update(task_id, status=rng.choice(("pending", "completed")), owner="", metadata={"note": note})


def test_a_kill_mid_rewrite_never_leaves_a_task_file_unreadable(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    for i in range(6):
        tl.create(f"task {i + 1}", "d" * 200)
    rng = random.Random(7)
    for r in range(20):
        pids = []
        for w in range(3):
            pid = os.fork()
            if pid == 0:  # pragma: no cover - child
                try:
                    _rewriter(root, team, r * 10 + w)
                finally:
                    os._exit(0)
            pids.append(pid)
        time.sleep(rng.uniform(0.003, 0.02))
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        for n in range(1, 7):  # every file whole, after every round of kills
            assert json.loads((root / "tasks" / team / f"{n}.json").read_bytes())["id"] == str(n)
    assert [t.id for t in TaskList(root, team).list()] == [str(n) for n in range(1, 7)]


def test_a_rewrite_in_place_is_seen_by_a_reader_that_caches(root: Path, team: str) -> None:
    writer, reader = TaskList(root, team), TaskList(root, team)
    task = writer.create("Grow and shrink", "d")
    path = root / "tasks" / team / f"{task.id}.json"
    inode = path.stat().st_ino
    sizes = []
    for note in ("a" * 300, "", "b" * 10, ""):
        writer.update(task.id, metadata={"note": note or None})
        assert reader.get(task.id).meta.get("note") == (note or None)  # never a stale cache
        sizes.append(path.stat().st_size)
    assert path.stat().st_ino == inode, "written in place, not replaced"
    assert len(set(sizes)) == len(sizes), "each write changes the size, so a cache key changes"


def test_a_new_task_file_is_made_from_a_spare_and_no_spare_outlives_its_process(
    root: Path, team: str
) -> None:
    code = (
        "import sys; from ipc import TaskList; tl = TaskList(sys.argv[1], sys.argv[2]); "
        "[tl.create(f't{i}') for i in range(3)]; "
        "import os; print(len([n for n in os.listdir(tl.dir) if n.startswith('.spare.')]))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(root), team], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1", "a spare waits for the next create while the process runs"
    names = os.listdir(root / "tasks" / team)
    assert not [n for n in names if n.startswith(".spare.") or n.endswith(".tmp")], names
    assert sorted(n for n in names if n.endswith(".json")) == ["1.json", "2.json", "3.json"]


def test_hand_out_claims_in_one_pass_only_what_is_claimable(root: Path, team: str) -> None:
    tl = TaskList(root, team)
    for name in ("free", "taken", "blocked", "failed", "also free"):
        tl.create(name)
    tl.claim("2", "bob")
    tl.update("3", add_blocked_by=["1"])
    tl.update("4", metadata={"lastError": "turn failed"})
    pairs = [("1", "alice"), ("2", "alice"), ("3", "bob"), ("4", "bob"), ("5", "bob")]
    assert tl.hand_out(pairs) == [("1", "alice"), ("5", "bob")]
    assert [(t.id, t.owner, t.status) for t in tl.list() if t.id in ("1", "5")] == [
        ("1", "alice", "in_progress"),
        ("5", "bob", "in_progress"),
    ]
    assert tl.get("2").owner == "bob" and tl.get("3").owner is UNSET and tl.get("4").owner is UNSET
    before = (root / "tasks" / team / "1.json").stat().st_mtime_ns
    assert tl.claim_next("alice", hint="1") == tl.get("1"), "a task handed to alice is hers"
    assert (root / "tasks" / team / "1.json").stat().st_mtime_ns == before, "taken without a write"


def test_a_teammate_idle_through_a_burst_takes_the_shared_prefix_not_every_task(
    root: Path, team: str
) -> None:
    idle, worker = TaskList(root, team), TaskList(root, team)
    assert idle.claim_next("alice") is None  # its look at its start
    worker.create_many([(f"t{i}", "", None, None, []) for i in range(100)])
    for task_id in worker.hand_out([(str(i), "bob") for i in range(1, 101)]):
        worker.update(task_id[0], status="completed", by="bob")  # handed out and done: no look
    assert worker.claim_next("bob") is None and worker.window.through == 100  # one look, shared
    reads: list[str] = []
    read = idle.window._read

    def counted(task_id: str) -> Task | None:
        reads.append(task_id)
        return read(task_id)

    idle.window._read = counted
    assert idle.claim_next("alice") is None
    assert idle.window.through == 100 and reads == [], "the prefix was taken, no task read"


# ---------------------------------------------------------------- the supervisor hands out claims


@pytest.fixture
def handing(
    tmp_path: Path,
) -> Iterator[tuple[Router, Roster, dict[str, link.AgentLink], list[tuple[str, str]]]]:
    claimed: list[tuple[str, str]] = []
    taken = {"9"}  # a task someone else claimed first

    def hand_out(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        done = [p for p in pairs if p[0] not in taken]
        claimed.extend(done)
        return done

    with routing(tmp_path, ("ann", "bob")) as (router, roster, agents):
        router.hand_out = hand_out
        yield router, roster, agents, claimed


def test_ready_tasks_are_claimed_for_idle_teammates_and_queued_for_the_next(
    handing: tuple[Router, Roster, dict[str, link.AgentLink], list[tuple[str, str]]],
) -> None:
    router, roster, agents, claimed = handing
    roster.idle_names += ["ann", "bob"]
    assert router.route_tasks(["1", "9", "2", "3"], relay=False) == ["ann", "bob"]
    assert claimed == [("1", "ann"), ("2", "bob")], "9 was taken: it is dropped, 2 goes instead"
    assert frames_to(agents["ann"]) == [link.Wake(task="1")]
    assert frames_to(agents["bob"]) == [link.Wake(task="2")]
    assert list(router.ready) == ["3"]
    said(router, agents["ann"], link.State(state="running", task="1"))
    said(router, agents["ann"], link.State(state="idle"))  # ann's turn ended: 3 is hers
    assert frames_to(agents["ann"]) == [link.Wake(task="3")] and claimed[-1] == ("3", "ann")
    said(router, agents["bob"], link.State(state="idle"))  # nothing left for bob
    assert agents["bob"].receive() == [] and not router.ready


def test_the_on_call_teammate_rung_by_a_creator_is_not_woken_again(
    handing: tuple[Router, Roster, dict[str, link.AgentLink], list[tuple[str, str]]], tmp_path: Path
) -> None:
    router, roster, agents, claimed = handing
    said(router, agents["ann"], link.State(state="idle"))
    assert on_call(tmp_path) == "ann"
    said(router, agents["bob"], link.State(state="idle"))
    assert on_call(tmp_path) == "ann", "the first idle stays on call"
    assert router.route_tasks(["5", "6"], relay=False, rung="ann") == ["ann", "bob"]
    assert claimed == [("6", "bob")], "ann claims for herself: only 6 is handed out"
    assert agents["ann"].receive() == [] and frames_to(agents["bob"]) == [link.Wake(task="6")]
    assert on_call(tmp_path) == "", "no one idle is left to be on call"


def test_a_task_the_rung_teammate_claimed_before_the_supervisor_heard_of_it_is_not_routed(
    handing: tuple[Router, Roster, dict[str, link.AgentLink], list[tuple[str, str]]], tmp_path: Path
) -> None:
    """Rung ahead of the task's file, the on-call teammate may claim it, and even finish it,
    before the creator's word reaches the supervisor: that task needs no one else, and the
    teammate is not held back as if still about to claim."""
    router, roster, agents, claimed = handing
    said(router, agents["ann"], link.State(state="idle"))
    said(router, agents["bob"], link.State(state="idle"))
    assert on_call(tmp_path) == "ann"
    said(router, agents["ann"], link.State(state="running", task="5"))
    said(router, agents["ann"], link.State(state="idle"))  # done already
    assert router.route_tasks(["5", "6"], relay=False, rung="ann", ahead=True) == ["bob"]
    assert claimed == [("6", "bob")], "5 is hers and done: only 6 is handed out"
    assert "ann" not in router.claiming and on_call(tmp_path) == "ann", "she is free for the next"
    # A task made ready again (retried, reopened) is not one she claimed for this ring.
    assert router.route_tasks(["5"], relay=False, rung="ann") == ["ann"]
    assert "ann" in router.claiming


def _alice_on_call(
    root: Path, team: str
) -> tuple[TeamHandle, Path, zmq.Context[zmq.Socket[bytes]], WakeListener]:
    """A handle on the team, and alice on call, listening at her doorbell."""
    handle = TeamHandle(team, root=root)
    runtime = handle.paths.runtime_dir()
    (runtime / ON_CALL).write_text("alice")
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    return handle, runtime, ctx, WakeListener(ctx, runtime, "alice")


def test_a_create_rings_the_on_call_teammate_once_under_the_lock_before_its_file_is_written(
    root: Path, team: str
) -> None:
    handle, runtime, ctx, alice = _alice_on_call(root, team)
    seen: list[tuple[bool, bool]] = []
    ring = handle._ring_on_call

    def ring_ahead(task_id: str) -> str:
        seen.append((_lock_is_held(handle.paths), handle.paths.task(task_id).exists()))
        return ring(task_id)

    handle.tasks.ring_ahead = ring_ahead
    try:
        task = handle.tasks.create("Ring ahead")
        assert seen == [(True, False)], "rung under the list's lock, before the task's file"
        assert alice.socket.poll(5000), "the on-call teammate was not rung"
        assert alice.drain() == 1 and alice.take_notes() == [task.id], "rung once, with the id"
        assert not alice.socket.poll(100), "rung a second time after the create"
        handle.tasks.create("Assigned", owner="bob")
        handle.tasks.create("Blocked", blocked_by=[task.id])
        handle.tasks.create_many([("One of two", "", None, None, []), ("Two of two", "", None, None, [])])
        handle.tasks.create("Hidden", metadata={"_internal": True})
        assert len(seen) == 1, "with an owner, blocked, a batch: rung after; one no teammate takes: never"
        notes: list[bytes] = []
        failing = [0]  # how many rings of the next create fail
        wake = handle._doorbell.wake

        def fails(agent: str, note: bytes = b"") -> bool:
            notes.append(note)
            if len(notes) <= failing[0]:
                raise zmq.ZMQError(errno.EMFILE)  # out of files for a socket
            return wake(agent, note)

        handle._doorbell.wake = fails  # type: ignore[method-assign]
        for failing[0] in (1, 2):  # the ring ahead fails; then the ring after the write too
            notes.clear()
            late = handle.tasks.create("Rung after the write, or not at all")
            assert handle.tasks.get(late.id).status == "pending", "a failed ring does not fail the create"
            assert notes == [late.id.encode()] * 2, "rung again after the write"
    finally:
        handle.close()
        alice.close()
        ctx.term()


def test_a_first_create_makes_its_doorbell_socket_before_it_takes_the_lists_lock(
    root: Path, team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    handle, runtime, ctx, alice = _alice_on_call(root, team)
    held: list[bool] = []
    connect = Waker._connect

    def connect_noting_the_lock(waker: Waker, path: Path) -> Any:
        held.append(_lock_is_held(handle.paths))
        return connect(waker, path)

    monkeypatch.setattr(Waker, "_connect", connect_noting_the_lock)
    try:
        alice.close()  # not listening yet: a create rings no one, and starts no ZeroMQ
        task_create(handle, TaskCreate(subject="Before she listens"))
        assert held == []
        alice = WakeListener(ctx, runtime, "alice")
        with pytest.raises(InvalidInput, match="not a JSON number"):
            task_create(handle, TaskCreate(subject="Refused", metadata={"score": float("nan")}))
        with pytest.raises(NotFound):  # refused under the lock: a blocked task is not rung ahead
            handle.tasks.create("Blocked by nothing there", blocked_by=["999"])
        assert held == [], "a refused create started ZeroMQ"
        task = task_create(handle, TaskCreate(subject="The first she hears"))
        assert held == [False], "ZeroMQ started under the task list's lock (about a millisecond held)"
        assert alice.socket.poll(5000) and alice.drain() == 1 and alice.take_notes() == [task.id]
        task_create(handle, TaskCreate(subject="The second"))
        assert held == [False], "one socket for the on-call teammate, made once"
    finally:
        handle.close()
        alice.close()
        ctx.term()


def _lock_is_held(paths: TeamPaths) -> bool:
    fd = os.open(paths.tasks_lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def test_a_teammate_rung_ahead_of_the_task_file_waits_for_the_lock_and_claims_it(
    root: Path, team: str
) -> None:
    creator, claimer = TaskList(root, team), TaskList(root, team)
    waiting = threading.Event()
    take_lock = claimer._locked
    rung_for: list[str] = []
    files: list[tuple[bool, bool]] = []  # the task's file there: as it asks for the lock, once it has it

    @contextlib.contextmanager
    def locked_after_saying_so() -> Iterator[Any]:
        asked = creator.paths.task(rung_for[0]).exists()
        waiting.set()
        with take_lock() as guard:
            files.append((asked, creator.paths.task(rung_for[0]).exists()))
            yield guard

    claimer._locked = locked_after_saying_so  # type: ignore[method-assign]
    claimed: list[Task | None] = []

    def rung(task_id: str) -> str:  # as the on-call teammate is rung: the file is not there yet
        rung_for.append(task_id)
        thread = threading.Thread(target=lambda: claimed.append(claimer.claim_next("alice", hint=task_id)))
        thread.start()
        threads.append(thread)
        while thread.is_alive() and not waiting.wait(0.01):
            pass  # until it goes for the lock this create holds (or gives up without it)
        return ""

    threads: list[threading.Thread] = []
    creator.ring_ahead = rung
    task = creator.create("Rung before it was written")
    threads[0].join(10)
    assert claimed and claimed[0] is not None, "the teammate went idle: the task was not there yet"
    assert claimed[0].id == task.id and creator.get(task.id).owner == "alice"
    assert files[0] == (False, True), "it asked for the lock before the file was written, had it after"
    # Found under the lock, a task that no teammate may take is left alone.
    made: list[Task] = []

    def made_meanwhile() -> Any:  # its file appears between the teammate's look and its lock
        if not made:
            made.append(creator.create("Claude Code's own", metadata={"_internal": True}))
        return take_lock()

    claimer._locked = made_meanwhile  # type: ignore[method-assign]
    hint = str(int(task.id) + 1)
    assert claimer.claim_next("alice", hint=hint) is None
    assert made[0].id == hint and creator.get(hint).owner_name is None


def test_a_teammate_held_by_its_budget_or_back_off_is_handed_nothing_until_idle(
    handing: tuple[Router, Roster, dict[str, link.AgentLink], list[tuple[str, str]]],
) -> None:
    router, roster, agents, claimed = handing
    said(router, agents["ann"], link.State(state="held"))
    said(router, agents["bob"], link.State(state="idle"))
    assert router.route_tasks(["1", "2"], relay=False) == ["bob"]
    assert claimed == [("1", "bob")] and list(router.ready) == ["2"]
    assert agents["ann"].receive() == []
    said(router, agents["ann"], link.State(state="idle"))  # its hold is over
    assert frames_to(agents["ann"]) == [link.Wake(task="2")] and claimed[-1] == ("2", "ann")


def test_a_turn_waiting_on_another_process_gives_its_room_to_the_next_within_the_cap_in_all(
    tmp_path: Path,
) -> None:
    with routing(tmp_path, ("ann", "bob", "cid")) as (router, roster, agents):
        router.hand_out = lambda pairs: pairs  # every pair claimed
        router.caps = {True: TurnCap(computing=1, in_all=2), False: TurnCap(1, 2)}
        roster.idle_names += ["ann", "bob", "cid"]
        assert router.route_tasks(["1", "2", "3"], relay=False) == ["ann"]
        assert frames_to(agents["ann"]) == [link.Wake(task="1")]
        said(router, agents["ann"], link.State(state="running", task="1"))
        said(router, agents["ann"], link.Waiting(waiting=True))  # ann's command runs
        assert frames_to(agents["bob"]) == [link.Wake(task="2")]
        said(router, agents["bob"], link.State(state="running", task="2"))
        said(router, agents["bob"], link.Waiting(waiting=True))
        assert agents["cid"].receive() == [] and list(router.ready) == ["3"], "two turns in all"
        said(router, agents["ann"], link.Waiting(waiting=False))  # computing again
        said(router, agents["bob"], link.State(state="idle"))  # bob's turn ended
        assert agents["cid"].receive() == [] and list(router.ready) == ["3"], "ann computes"
        said(router, agents["ann"], link.State(state="idle"))
        assert frames_to(agents["ann"]) == [link.Wake(task="3")] and not router.ready


def test_teammates_on_an_api_have_room_of_their_own_beside_the_offline_ones(tmp_path: Path) -> None:
    with routing(tmp_path, ("ann", "bob", "cid")) as (router, roster, agents):
        router.hand_out = lambda pairs: pairs  # every pair claimed
        router.caps = {True: TurnCap(computing=1, in_all=1), False: TurnCap(1, 1)}
        router.open("bob", cpu_bound=False)  # its model is behind an API: it costs no core here
        assert router.api_agents == 1
        roster.idle_names += ["ann", "cid", "bob"]
        assert router.route_tasks(["1", "2", "3"], relay=False) == ["ann", "bob"]
        assert agents["cid"].receive() == [] and list(router.ready) == ["3"], "one offline turn"
        router.drop("bob")
        assert router.api_agents == 0 and router.cpu_bound == {"ann": True, "cid": True}


def test_a_teammate_whose_process_ended_mid_turn_gives_its_room_back(tmp_path: Path) -> None:
    with routing(tmp_path, ("ann", "bob")) as (router, roster, agents):
        router.hand_out = lambda pairs: pairs  # every pair claimed
        router.caps = {True: TurnCap(computing=1, in_all=1), False: TurnCap(1, 1)}
        roster.idle_names += ["ann", "bob"]
        assert router.route_tasks(["1", "2"], relay=False) == ["ann"]
        said(router, agents["ann"], link.State(state="running", task="1"))
        said(router, agents["ann"], link.Waiting(waiting=True))
        assert agents["bob"].receive() == [] and list(router.ready) == ["2"], "one turn in all"
        roster.idle_names.insert(0, "ann")  # not settled yet when its exit is first heard of
        router.ended("ann")  # killed mid-wait: it sends no state again
        assert frames_to(agents["bob"]) == [link.Wake(task="2")] and not router.ready
        assert not router.waiting and not router.in_turn and "ann" not in router.claiming


def test_a_hand_out_that_meets_a_crowded_lock_keeps_its_tasks_and_tries_again(
    handing: tuple[Router, Roster, dict[str, link.AgentLink], list[tuple[str, str]]],
) -> None:
    router, roster, agents, claimed = handing
    assert router.hand_out is not None
    works = router.hand_out
    crowded = [True]

    def hand_out(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        if crowded.pop() if crowded else False:
            raise LockTimeout("timed out waiting for lock tasks/t/.lock")
        return works(pairs)

    router.hand_out = hand_out
    roster.idle_names.append("ann")
    assert router.route_tasks(["4"], relay=False) == []
    assert list(router.ready) == ["4"] and claimed == [], "kept, nothing claimed"

    def retried() -> bool:
        router.reactor.run_once(0.05)  # the retry's timer
        return bool(claimed)

    wait_for(retried, 5)
    assert claimed == [("4", "ann")] and frames_to(agents["ann"]) == [link.Wake(task="4")]


# ---------------------------------------------------------------- end to end


def test_a_burst_is_handed_out_to_every_idle_teammate_and_done_once(root: Path) -> None:
    with running_team(root) as team:
        for name in ("ann", "bob", "cid"):
            team.spawn(name, prompt="Work through the task list.")
        wait_for(lambda: all(m.state == "idle" for m in team.status().teammates), timeout=30)
        wakes = team.status().task_wakes
        team.tasks.create_many([(f"burst {i}", "", None, {"command": "true"}, []) for i in range(24)])
        wait_for(lambda: all(t.status == "completed" for t in team.tasks.list()), timeout=60)
        owners = [t.owner for t in team.tasks.list()]
        assert set(owners) <= {"ann", "bob", "cid"} and len(set(owners)) >= 2, owners
        # One wake per task, each naming a task already claimed for its teammate (one may
        # have gone to the on-call teammate rung by the creator, which claims for itself).
        assert team.status().task_wakes - wakes in (23, 24)
        done = [
            m.text.split("#", 1)[1].split(":", 1)[0]
            for m in team.inbox("team-lead").read()
            if m.text.startswith("Completed task #")
        ]
        assert sorted(done, key=int) == [t.id for t in team.tasks.list()], "each task done once"


def test_a_task_assigned_while_blocked_waits_for_its_blocker_then_its_owner_runs_it(root: Path) -> None:
    with running_team(root) as team:
        team.spawn("alice", prompt="")
        wait_for(lambda: (m := team.status().teammate("alice")) is not None and m.state == "idle", timeout=30)
        first = team.tasks.create("First", owner="team-lead")  # no teammate takes it up
        ran = root / "ran.txt"
        second = team.tasks.create("Second", blocked_by=[first.id], metadata={"command": f"echo ran > {ran}"})
        team.tasks.update(second.id, owner="alice")
        # alice is told and looks: the blocker refuses the start, and the task stays hers, pending.
        wait_for(lambda: not team.inbox("alice").unread())
        time.sleep(0.3)  # her turn, had the task been run: the command is quick
        assert (m := team.status().teammate("alice")) is not None and m.state == "idle"
        assert (team.tasks.get(second.id).status, ran.exists()) == ("pending", False)
        team.tasks.update(first.id, status="completed")
        done = wait_for(lambda: (t := team.tasks.get(second.id)).status == "completed" and t, timeout=30)
        assert done.owner == "alice" and ran.read_text() == "ran\n"
