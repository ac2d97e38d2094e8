"""N processes appending to one inbox (throughput, lock wait, fairness) and N claimers
racing for K tasks (claims per second, exactly once)."""

from __future__ import annotations

import multiprocessing as mp
import time
from collections import Counter
from typing import Any

from benchmarks.common import percentiles, scratch
from ipc import Mailbox, TaskList, TeamConfigStore
from ipc import mailbox as mailbox_module

CTX = mp.get_context("fork")
# The same number of appends in every row, quick or not: long enough (half a second or more)
# that the writers' start is not what is measured (at 2,000, 16 writers measured 16,000/s
# where 10,000 measure 20,000); the inbox ends with that many unread messages.
APPENDS_PER_ROW = 10_000


class _TimedLock:
    """The mailbox's lock, its wait recorded in ``waits`` (ms). A class made once: one made
    per append cost the writer 4 µs and a garbage cycle, a quarter of an append's CPU among
    16 writers."""

    waits: list[float] = []
    real = mailbox_module.locked
    __slots__ = ("inner",)

    def __init__(self, path: Any, **kwargs: Any) -> None:
        self.inner = self.real(path, **kwargs)

    def __enter__(self) -> Any:
        t0 = time.perf_counter()
        guard = self.inner.__enter__()
        self.waits.append((time.perf_counter() - t0) * 1e3)
        return guard

    def __exit__(self, *exc: Any) -> None:
        self.inner.__exit__(*exc)


def _appender(root: str, writer: int, count: int, start: Any, out: Any) -> None:
    waits = _TimedLock.waits
    mailbox_module.locked = _TimedLock  # type: ignore[misc,assignment]  # this child process only
    mb = Mailbox(root, "bench", "sink")
    start.wait()
    t0 = time.perf_counter()
    for i in range(count):
        mb.append(sender=f"w{writer}", text=f"{writer}:{i} " + "x" * 80)
    out.put((writer, count / (time.perf_counter() - t0), waits))


def appends(writers: int, per_writer: int) -> dict[str, Any]:
    with scratch() as root:
        store = TeamConfigStore(root, "bench")
        store.create()
        store.add_member("sink")
        start, out = CTX.Event(), CTX.Queue()
        procs = [
            CTX.Process(target=_appender, args=(str(root), w, per_writer, start, out)) for w in range(writers)
        ]
        for p in procs:
            p.start()
        time.sleep(0.2)
        t0 = time.perf_counter()
        start.set()
        results = [out.get(timeout=300) for _ in procs]
        elapsed = time.perf_counter() - t0
        for p in procs:
            p.join()
        texts = [m.text.split(" ")[0] for m in Mailbox(root, "bench", "sink").read()]
    rates = [r for _, r, _ in results]
    waits = [w for _, _, ws in results for w in ws]
    expected = Counter(f"{w}:{i}" for w in range(writers) for i in range(per_writer))
    jain = sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates))
    return {
        "writers": writers,
        "appends": writers * per_writer,
        "appends_per_s": writers * per_writer / elapsed,
        "lock_wait_ms": percentiles(waits),
        "fairness_jain": jain,
        "exactly_once": Counter(texts) == expected,
    }


def _claimer(root: str, agent: str, start: Any, out: Any) -> None:
    tl = TaskList(root, "bench")
    start.wait()
    won = []
    while True:
        task = tl.claim_next(agent)
        if task is None:
            break
        won.append(task.id)
    out.put(won)


def claims(claimers: int, tasks: int) -> dict[str, Any]:
    with scratch() as root:
        store = TeamConfigStore(root, "bench")
        store.create()
        agents = [store.add_member(f"c{i}").name for i in range(claimers)]
        tl = TaskList(root, "bench")
        for i in range(tasks):
            tl.create(f"task {i}")
        start, out = CTX.Event(), CTX.Queue()
        procs = [CTX.Process(target=_claimer, args=(str(root), a, start, out)) for a in agents]
        for p in procs:
            p.start()
        time.sleep(0.2)
        t0 = time.perf_counter()
        start.set()
        won = [tid for _ in procs for tid in out.get(timeout=300)]
        elapsed = time.perf_counter() - t0
        for p in procs:
            p.join()
    counts = Counter(won)
    return {
        "claimers": claimers,
        "tasks": tasks,
        "claims_per_s": len(won) / elapsed,
        "exactly_once": len(counts) == tasks and all(v == 1 for v in counts.values()),
    }


def run(quick: bool) -> dict[str, Any]:
    sizes = (1, 4, 16) if quick else (1, 2, 4, 8, 16, 32)
    append_rows = [appends(n, APPENDS_PER_ROW // n) for n in sizes]
    claim_rows = [claims(n, 50 if quick else 200) for n in ((4, 16) if quick else (1, 4, 16, 32))]
    sixteen = next((r for r in append_rows if r["writers"] == 16), None)
    targets = []
    if sixteen:
        targets.append(
            {
                "target": "16 contending writers ≥ 20,000 appends/s, every message present",
                "value": sixteen["appends_per_s"],
                "met": sixteen["appends_per_s"] >= 20_000 and sixteen["exactly_once"],
            }
        )
    return {"appends": append_rows, "claims": claim_rows, "targets": targets}
