"""Real processes (fork, not threads) racing on one team's state."""

from __future__ import annotations

import multiprocessing as mp
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from ipc import Mailbox, TaskList, TeamConfigStore

CTX = mp.get_context("fork")
WRITERS = 16


def _append_many(root: str, team: str, writer: int, count: int, start: mp.synchronize.Event) -> None:
    start.wait()
    mb = Mailbox(root, team, "alice")
    for i in range(count):
        mb.append(sender=f"w{writer}", text=f"{writer}:{i}")


def _check_parseable(
    root: str, team: str, stop: mp.synchronize.Event, bad: mp.sharedctypes.Synchronized[int]
) -> None:
    # Appends are written in place: a reader may catch one half done, and must then never
    # act on it. What it sees must only ever grow, and always be whole messages.
    mailbox = Mailbox(root, team, "alice")
    seen = 0
    while not stop.is_set():
        try:
            count = len(mailbox.read())
        except Exception:  # noqa: BLE001 - any error here is the failure being counted
            bad.value += 1
            continue
        if count < seen:
            bad.value += 1
        seen = count


def _run(procs: Sequence[mp.process.BaseProcess]) -> None:
    for p in procs:
        p.start()


def test_16_processes_x_200_appends(root: Path, team: str) -> None:
    start = CTX.Event()
    stop = CTX.Event()
    bad = CTX.Value("i", 0)
    watcher = CTX.Process(target=_check_parseable, args=(str(root), team, stop, bad))
    watcher.start()
    writers = [
        CTX.Process(target=_append_many, args=(str(root), team, w, 200, start)) for w in range(WRITERS)
    ]
    _run(writers)
    start.set()
    for p in writers:
        p.join(120)
        assert p.exitcode == 0
    stop.set()
    watcher.join(10)
    texts = [m.text for m in Mailbox(root, team, "alice").read()]
    assert len(texts) == WRITERS * 200
    assert Counter(texts) == Counter(f"{w}:{i}" for w in range(WRITERS) for i in range(200))
    assert bad.value == 0
    for w in range(WRITERS):  # each writer's own messages stay in order
        mine = [t for t in texts if t.startswith(f"{w}:")]
        assert mine == [f"{w}:{i}" for i in range(200)]


def _claim_all(root: str, team: str, agent: str, start: mp.synchronize.Event, out: mp.queues.Queue) -> None:  # type: ignore[type-arg]
    start.wait()
    tl = TaskList(root, team)
    won = []
    for task in tl.list():
        if tl.claim(task.id, agent).success:
            won.append(task.id)
    out.put((agent, won))


def test_16_processes_race_to_claim_50_tasks(root: Path) -> None:
    store = TeamConfigStore(root, "race")
    store.create()
    agents = [store.add_member(f"a{i}").name for i in range(WRITERS)]
    tl = TaskList(root, "race")
    for i in range(50):
        tl.create(f"task {i}")
    start, out = CTX.Event(), CTX.Queue()
    procs = [CTX.Process(target=_claim_all, args=(str(root), "race", a, start, out)) for a in agents]
    _run(procs)
    start.set()
    results = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(30)
    claims = Counter(tid for won in results.values() for tid in won)
    assert set(claims) == {str(i) for i in range(1, 51)}
    assert all(n == 1 for n in claims.values())
    for task in tl.list():
        assert task.status == "in_progress" and task.id in results[task.owner_name or ""]


def _add_member(root: str, i: int, start: mp.synchronize.Event) -> None:
    start.wait()
    TeamConfigStore(root, "adds").add_member("worker")


def test_16_concurrent_member_adds_lose_nothing(root: Path) -> None:
    TeamConfigStore(root, "adds").create()
    start = CTX.Event()
    procs = [CTX.Process(target=_add_member, args=(str(root), i, start)) for i in range(WRITERS)]
    _run(procs)
    start.set()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    teammates = TeamConfigStore(root, "adds").read().teammates()
    names = [m.name for m in teammates]
    assert len(names) == WRITERS and len(set(names)) == WRITERS
    assert set(names) == {"worker"} | {f"worker-{i}" for i in range(2, WRITERS + 1)}
    colors = Counter(m.color for m in teammates)
    assert all(n == 2 for n in colors.values()) and len(colors) == 8
