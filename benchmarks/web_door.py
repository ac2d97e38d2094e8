"""A write in a team → its Server-Sent Event received by a client of ``agentteams serve``
(``GET /api/v1/teams/{team}/events``): a message through the one path every agent sends by
(write the inbox, then ring), and a task changed in the task list. The server is its own
process; the writes and the stream's reader are this one, so one clock times both ends.

Traffic is spaced (a pause before each write, as agents' is), one write at a time: its
event is read before the next write.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.common import percentiles, scratch
from benchmarks.latency import SPACED
from ipc.config import TeamConfigStore
from ipc.messaging import Messenger
from ipc.paths import TeamPaths
from ipc.tasks import TaskList
from ipc.wake import Waker

TEAM = "bench"
WARM = 5
TARGET_MS = 50.0  # the dashboard's promise: a change on the page within 50 ms


def _events(lines: Iterator[str]) -> Iterator[tuple[str, Any]]:
    name, data = "message", ""
    for line in lines:
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif not line and data:
            yield name, json.loads(data)
            name, data = "message", ""


def _measure(
    events: Iterator[tuple[str, Any]],
    samples: int,
    write: Callable[[int], object],
    heard: Callable[[str, Any, int], bool],
) -> list[float]:
    out = []
    for i in range(WARM + samples):
        time.sleep(SPACED)
        t0 = time.monotonic_ns()
        write(i)
        for name, data in events:
            if heard(name, data, i):
                break
        if i >= WARM:
            out.append((time.monotonic_ns() - t0) / 1e6)
    return out


def run(quick: bool) -> dict[str, Any]:
    import httpx2

    samples = 30 if quick else 300
    with scratch() as root:
        store = TeamConfigStore(root, TEAM)
        store.create(cwd=str(root))
        store.add_member("alice")
        paths = TeamPaths(root, TEAM)
        waker = Waker(paths.runtime_dir())
        messenger = Messenger.at(paths, waker=waker)
        tasks = TaskList(root, TEAM)
        task = tasks.create("bench", "a task changed again and again")
        server = subprocess.Popen(
            [sys.executable, "-m", "supervisor.cli", "serve", "--root", str(root), "--port", "0", "--json"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            info = json.loads(server.stdout.readline())
            headers = {"Authorization": f"Bearer {info['token']}"}
            with (
                httpx2.Client(timeout=30, headers=headers) as client,
                client.stream("GET", f"{info['base']}/api/v1/teams/{TEAM}/events") as response,
            ):
                events = _events(response.iter_lines())
                assert next(events)[0] == "hello"
                messages = _measure(
                    events,
                    samples,
                    lambda i: messenger.send_message("team-lead", "alice", f"bench {i}", "bench"),
                    lambda name, data, i: name == "message" and data["event"]["text"] == f"bench {i}",
                )
                changes = _measure(
                    events,
                    samples,
                    lambda i: tasks.update(task.id, subject=f"bench {i}"),
                    lambda name, data, i: name == "task" and task.id in data["ids"],
                )
        finally:
            waker.close()
            server.terminate()
            server.wait(15)
    rows = [_row("a message (write, ring) → its 'message' event", messages, samples)]
    rows.append(_row("a task changed → its 'task' event", changes, samples))
    return {"rows": rows, "targets": targets(rows)}


def _row(path: str, values: list[float], samples: int) -> dict[str, Any]:
    return {
        "path": path,
        "n": len(values),
        "lost": samples - len(values),
        **percentiles(values),
        "values": values,
    }


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"target": f"{r['path']}: p99 ≤ {TARGET_MS:g} ms", "value": r["p99"], "met": r["p99"] <= TARGET_MS}
        for r in rows
    ]
