"""Task create → claimed by an idle teammate, through the Python API and through the CLI
(a whole `agentteams task create` process, its start included); and a burst of tasks into
many idle teammates: how many wakes each task costs, and how long the burst takes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

from benchmarks.common import env, percentiles, scratch, team_of
from ipc import trace


def _claimed_at(team: Any, task_id: str, timeout: float = 10.0) -> tuple[int, int]:
    """When the teammate that claimed the task woke, and when it had claimed it (0, 0: lost)."""
    deadline = time.monotonic() + timeout
    key = f"task-{task_id}"
    while time.monotonic() < deadline:
        for span in trace.spans(team.paths):
            if span.msg_id == key and span.taken:
                return span.woke, span.taken
        time.sleep(0.0005)
    return 0, 0


def create_to_claimed(via: str, samples: int, teammates: int = 4) -> dict[str, Any]:
    values, wakes, claims = [], [], []
    with scratch() as root, env(AGENTTEAMS_TRACE="1"), team_of(root, teammates) as (team, _):
        for i in range(samples):
            time.sleep(0.02)  # every teammate idle again
            if via == "api":
                t0 = time.time_ns()
                task = team.tasks.create(f"bench {i}")
                task_id = task.id
            else:
                t0 = time.time_ns()
                out = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "supervisor.cli",
                        "task",
                        "create",
                        team.name,
                        f"bench {i}",
                        "--root",
                        str(team.root),
                        "--json",
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                task_id = out.stdout.split('"id": "', 1)[1].split('"', 1)[0]
            woke, taken = _claimed_at(team, task_id)
            if taken:
                values.append((taken - t0) / 1e6)
                wakes.append((woke - t0) / 1e6)
                claims.append((taken - woke) / 1e6)
    return {
        "via": via,
        "teammates": teammates,
        **percentiles(values),
        "lost": samples - len(values),
        # the stages: create and ring (to the teammate's wake), then its claim
        "to_wake_p50": percentiles(wakes).get("p50", 0.0),
        "claim_p50": percentiles(claims).get("p50", 0.0),
    }


def burst(teammates: int, tasks: int) -> dict[str, Any]:
    """A burst of ``tasks`` into ``teammates`` idle teammates: from the call that creates
    them to the last one completed, as its file records it (the write that marked it so:
    a poll every 50 ms would add up to 50 ms to a burst of about a second). The two phases
    apart: ``create_s``, the call writing every task under the list's lock (no teammate can
    claim one before it returns), and ``work_s``, from its return to the last completion.
    Teams of different sizes are compared on ``work_s``: the creating call is the same work
    whatever the team's size, and its time varies tenfold from run to run on this machine's
    ext4 (without a journal, a new file skips recently freed inodes one by one)."""
    with scratch() as root, team_of(root, teammates) as (team, _):
        time.sleep(0.5)
        before = team.status().task_wakes
        t0 = time.time_ns()
        team.tasks.create_many([(f"burst {i}", "", None, None, []) for i in range(tasks)])
        created = time.time_ns()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if all(t.status == "completed" for t in team.tasks.list()):
                break
            time.sleep(0.05)
        done = [t for t in team.tasks.list() if t.status == "completed"]
        finished = max((os.stat(team.paths.task(t.id)).st_mtime_ns for t in done), default=created)
        wakes = team.status().task_wakes - before
    seconds = (finished - t0) / 1e9
    return {
        "teammates": teammates,
        "tasks": tasks,
        "completed": len(done),
        "seconds": seconds,
        "create_s": (created - t0) / 1e9,
        "work_s": (finished - created) / 1e9,
        "tasks_per_s": len(done) / seconds,
        "wakes": wakes,
        "wakes_per_task": wakes / tasks,
    }


def bursts(sizes: tuple[tuple[int, int], ...], rounds: int) -> list[dict[str, Any]]:
    """Each size ``rounds`` times, the order reversed every other round (4, 64, 64, 4, …) so
    that a drift in the machine falls on both alike; each size's median run, with every run's
    figures kept."""
    runs: dict[int, list[dict[str, Any]]] = {t: [] for t, _ in sizes}
    for i in range(rounds):
        for t, k in sizes if i % 2 == 0 else tuple(reversed(sizes)):
            runs[t].append(burst(t, k))
    out = []
    for t, _ in sizes:
        ordered = sorted(runs[t], key=lambda r: r["work_s"])
        out.append({**ordered[len(ordered) // 2], "rounds": rounds, "runs": runs[t]})
    return out


def run(quick: bool) -> dict[str, Any]:
    load = os.getloadavg()  # how busy the machine was: other work inflates every figure here
    n = 20 if quick else 100
    rows = [create_to_claimed("api", n), create_to_claimed("cli", max(5, n // 5))]
    sizes = ((4, 100), (16, 100)) if quick else ((4, 1000), (64, 1000))
    small, large = bursts(sizes, 1 if quick else 3)
    api, cli = rows
    return {
        "load_average": {"before": load, "after": os.getloadavg()},
        "rows": rows,
        "bursts": [small, large],
        "targets": [
            {
                "target": "task create → claimed p50 ≤ 1 ms via the API",
                "value": api["p50"],
                "met": api["p50"] <= 1.0,
            },
            {
                "target": "task create → claimed p50 ≤ 20 ms via the CLI (process start included)",
                "value": cli["p50"],
                "met": cli["p50"] <= 20.0,
            },
            {
                "target": f"{large['teammates']} idle teammates, {large['tasks']} tasks: ≤ 2 wakes per task",
                "value": large["wakes_per_task"],
                "met": large["wakes_per_task"] <= 2.0,
            },
            {
                "target": f"the burst into {large['teammates']} teammates is at least as fast as into "
                f"{small['teammates']}, from the tasks written to the last completed (ratio of medians)",
                "value": large["work_s"] / small["work_s"],
                "met": large["work_s"] <= small["work_s"],
            },
        ],
    }
