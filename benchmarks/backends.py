"""In-process teammates beside processes, in the same run: memory per teammate and send →
the recipient's turn starts, for teams of 1, 16 and 64 (1 and 4 quick).

Memory is unique set size (what the teammates alone hold: pages shared with the fork server
or among threads count once): the sum over the teammates' processes, or the host's, divided
by the number of teammates.
"""

from __future__ import annotations

from typing import Any

import psutil

from benchmarks.latency import SPACED, system


def _uss(pid: int) -> int:
    try:
        return int(psutil.Process(pid).memory_full_info().uss)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0


def memory(team: Any) -> dict[str, Any]:
    mates = team.config().teammates()
    hosts = {int(m.tmux_pane_id.split(":")[1]) for m in mates if m.tmux_pane_id.startswith("in-process:")}
    pids = hosts or {t.pid for t in team.status().teammates if t.pid}
    total = sum(_uss(pid) for pid in pids)
    return {
        "processes": len(pids),
        "uss_mib": total / 2**20,
        "uss_mib_per_teammate": total / 2**20 / len(mates),
    }


def run(quick: bool) -> dict[str, Any]:
    sizes = (1, 4) if quick else (1, 16, 64)
    samples = 20 if quick else 200
    rows = []
    for n in sizes:
        for mode in ("process", "in-process"):
            row = system(n, "zmq", SPACED, 10, samples, teammate_mode=mode, probe=memory)
            row["path"] = mode
            rows.append(row)
    largest = max(sizes)
    per = {r["path"]: r["uss_mib_per_teammate"] for r in rows if r["teammates"] == largest}
    p50 = {r["path"]: r["p50"] for r in rows if r["teammates"] == largest}
    return {
        "rows": rows,
        "targets": [
            {
                "target": f"in-process: less memory per teammate than a process, at {largest} teammates (MiB)",
                "value": per["in-process"],
                "met": per["in-process"] < per["process"],
            },
            {
                "target": f"in-process: send → turn p50 within 2× a process's, at {largest} teammates (ms)",
                "value": p50["in-process"],
                "met": p50["in-process"] <= 2 * p50["process"],
            },
        ],
    }
