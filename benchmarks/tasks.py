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
    with scratch() as root, team_of(root, teammates) as (team, _):
        time.sleep(0.5)
        before = team.status().task_wakes
        t0 = time.perf_counter()
        team.tasks.create_many([(f"burst {i}", "", None, None, []) for i in range(tasks)])
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if all(t.status == "completed" for t in team.tasks.list()):
                break
            time.sleep(0.05)
        seconds = time.perf_counter() - t0
        done = sum(1 for t in team.tasks.list() if t.status == "completed")
        wakes = team.status().task_wakes - before
    return {
        "teammates": teammates,
        "tasks": tasks,
        "completed": done,
        "seconds": seconds,
        "tasks_per_s": done / seconds,
        "wakes": wakes,
        "wakes_per_task": wakes / tasks,
    }


def run(quick: bool) -> dict[str, Any]:
    load = os.getloadavg()  # how busy the machine was: other work inflates every figure here
    n = 20 if quick else 100
    rows = [create_to_claimed("api", n), create_to_claimed("cli", max(5, n // 5))]
    sizes = ((4, 100), (16, 100)) if quick else ((4, 1000), (64, 1000))
    bursts = [burst(t, k) for t, k in sizes]
    api, cli = rows
    small, large = bursts
    return {
        "load_average": {"before": load, "after": os.getloadavg()},
        "rows": rows,
        "bursts": bursts,
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
                "target": f"the burst into {large['teammates']} teammates is at least as fast as into {small['teammates']} (ratio of times)",
                "value": large["seconds"] / small["seconds"],
                "met": large["seconds"] <= small["seconds"],
            },
        ],
    }
