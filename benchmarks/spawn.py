"""Spawn → ready (fork server against a fresh interpreter) and USS per idle teammate."""

from __future__ import annotations

import time
from typing import Any

import psutil

from benchmarks.common import percentiles, scratch, wait_idle
from supervisor import Team


def spawn_latency(method: str, count: int) -> list[float]:
    with scratch() as root:
        team = Team.create("spawn", root=root, cwd=str(root))
        team.up(spawn=method)
        try:
            out = []
            for i in range(count):
                t0 = time.perf_counter()
                team.spawn(f"w{i}", prompt="")
                out.append((time.perf_counter() - t0) * 1e3)
                time.sleep(0.05)
            return out
        finally:
            team.down(grace=2)


def uss_per_teammate(count: int) -> float:
    with scratch() as root:
        team = Team.create("uss", root=root, cwd=str(root))
        team.up()
        try:
            for i in range(count):
                team.spawn(f"w{i}", prompt="")
            wait_idle(team, count)
            time.sleep(0.5)
            total = 0
            for mate in team.status().teammates:
                total += psutil.Process(mate.pid).memory_full_info().uss
            return total / count / 2**20
        finally:
            team.down(grace=2)


def run(quick: bool) -> dict[str, Any]:
    n = 5 if quick else 20
    rows: list[dict[str, Any]] = [
        {"method": m, **percentiles(spawn_latency(m, n))} for m in ("forkserver", "exec")
    ]
    uss = [{"teammates": c, "uss_mib": uss_per_teammate(c)} for c in ((1, 4) if quick else (1, 4, 16, 64))]
    forked = rows[0]
    worst_uss = max(r["uss_mib"] for r in uss)
    targets = [
        {
            "target": "spawn-to-ready p50 ≤ 50 ms (fork server)",
            "value": forked["p50"],
            "met": forked["p50"] <= 50,
        },
        {"target": "USS ≤ 15 MiB per idle teammate", "value": worst_uss, "met": worst_uss <= 15},
    ]
    return {"spawn": rows, "uss": uss, "targets": targets}
