"""The cost of idleness: CPU seconds and read syscalls per idle teammate per minute."""

from __future__ import annotations

import time
from typing import Any

import psutil

from benchmarks.common import scratch, team_of


def measure(wake: str, teammates: int, seconds: float) -> dict[str, Any]:
    with scratch() as root, team_of(root, teammates, wake=wake) as (team, _):
        time.sleep(1.0)
        procs = [psutil.Process(m.pid) for m in team.status().teammates]
        before = [(p.cpu_times(), p.io_counters()) for p in procs]
        time.sleep(seconds)
        after = [(p.cpu_times(), p.io_counters()) for p in procs]
    scale = 60.0 / seconds / teammates
    cpu = sum(
        (a[0].user + a[0].system) - (b[0].user + b[0].system) for a, b in zip(after, before, strict=True)
    )
    reads = sum(a[1].read_count - b[1].read_count for a, b in zip(after, before, strict=True))
    return {
        "wake": wake,
        "teammates": teammates,
        "seconds": seconds,
        "cpu_s_per_teammate_min": cpu * scale,
        "reads_per_teammate_min": reads * scale,
    }


def run(quick: bool) -> dict[str, Any]:
    seconds = 6.0 if quick else 60.0
    rows = [measure(w, 4, seconds) for w in ("zmq", "poll")]
    zmq_row = rows[0]
    return {
        "rows": rows,
        "targets": [
            {
                "target": "idle CPU ≈ 0 (zmq): < 0.05 CPU-s per teammate-minute",
                "value": zmq_row["cpu_s_per_teammate_min"],
                "met": zmq_row["cpu_s_per_teammate_min"] < 0.05,
            },
        ],
    }
