"""How cost grows with the team: 16, 256, 1,024 and 2,048 offline teammates on one host.

For each size: spawn time per teammate, USS per teammate, the supervisor's RSS, CPU and open
files, tasks per second for a burst of trivial tasks, send → turn into one teammate while the
team works through that burst (the recipient is one of the workers: the message waits for
its turn) and again once the team is idle, the whole team's CPU over an idle window, and how
long ``down`` takes. A size that would not fit in the memory available now is skipped, and says so.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from rich.table import Table

from benchmarks.common import env, percentiles, scratch
from ipc import trace
from ipc.errors import AgentTeamsError
from supervisor import Team
from supervisor.client import busy, ps
from supervisor.daemon.router import turn_caps

SIZES = (16, 256, 1024, 2048)
QUICK_SIZES = (4, 16)
BURST, QUICK_BURST = 1000, 40
IDLE_SECONDS, QUICK_IDLE_SECONDS = 60.0, 1.0
SAMPLES, QUICK_SAMPLES = 100, 10
BURST_DEADLINE = 120.0  # s; a burst still running then is reported as far as it got
SPACED = 0.010  # the pause after each latency sample into the idle team
BUSY_PAUSE = 0.1  # and into the busy one
USS_SAMPLE = 128  # teammates whose USS is read (smaps costs ~2 ms a process); the mean stands for all
MEMORY_HEADROOM = 1.15  # a size runs only if its estimated memory × this fits in what is available
MEMORY_FLOOR = 2.0  # GiB: a size stops spawning if the memory available falls under this


class MemoryFloor(Exception):
    """The host ran short of memory while a size was spawning (other work shares it)."""


def _cpu(proc: psutil.Process) -> float:
    try:
        times = proc.cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return float(times.user + times.system)


def _wait(predicate: Any, timeout: float, what: str, interval: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(interval)


def _status(team: Team, timeout: float = 120.0) -> Any:
    """The supervisor's status, asked again while it is too busy to answer in time: with a
    thousand teammates runnable on 2 cores it may not get the CPU for longer than one ask."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return team.status()
        except AgentTeamsError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def _timed_status(team: Team, out: list[float]) -> None:
    """One status asked of the supervisor, its wall time into ``out`` (NaN: no answer)."""
    t0 = time.perf_counter()
    try:
        team.status()
    except AgentTeamsError:
        out.append(math.nan)
        return
    out.append(time.perf_counter() - t0)


def _cli_s(root: Path, *args: str) -> float:
    """What a person waits for: ``agentteams ARGS`` as a command, start to exit."""
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "supervisor.cli", *args, "--root", str(root)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=300,
    )
    return time.perf_counter() - t0


def _completed(team: Team) -> int:
    return sum(1 for t in team.tasks.list() if t.status == "completed")


def _all_idle(team: Team, count: int) -> bool:
    try:
        states = [m.state for m in team.status().teammates]
    except AgentTeamsError:  # a supervisor too busy to answer in time: not settled
        return False
    return len(states) == count and all(s == "idle" for s in states)


def _latency(team: Team, target: str, samples: int, out: list[trace.Span], pause: float = SPACED) -> None:
    """Sends to ``target``, ``pause`` apart; their traced spans into ``out``."""
    seen = {s.msg_id for s in trace.spans(team.paths)}
    for i in range(samples):
        team.send(target, f"sample {i}", summary="latency sample")
        time.sleep(pause)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        taken = [s for s in trace.spans(team.paths) if s.msg_id not in seen and s.sent and s.taken]
        if len(taken) >= samples:
            break
        time.sleep(0.05)
    out.extend(taken)


def measure(
    teammates: int,
    burst: int,
    idle_seconds: float,
    samples: int,
    settle: float = 1.0,
    row: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One size, into ``row`` (what was measured stays there if a later step fails);
    ``settle``: seconds let pass before each quiet measure."""
    with scratch() as root, env(AGENTTEAMS_TRACE="1"):
        team = Team.create("scale", root=root, cwd=str(root))
        team.up()
        row = {} if row is None else row
        row["teammates"] = teammates
        try:
            sup = psutil.Process(team.supervisor_pid())
            cpu0, spawns = _cpu(sup), []
            t0 = time.perf_counter()
            for i in range(teammates):
                if i % 32 == 0 and (left := psutil.virtual_memory().available / 2**30) < MEMORY_FLOOR:
                    raise MemoryFloor(f"{left:.1f} GiB of memory available after {i:,} teammates")
                t = time.perf_counter()
                team.spawn(f"w{i}", prompt="")
                spawns.append((time.perf_counter() - t) * 1e3)
            row["spawn_s"] = time.perf_counter() - t0
            row["spawn_ms_per_teammate"] = row["spawn_s"] * 1e3 / teammates
            row["spawn_p50_ms"] = percentiles(spawns)["p50"]
            row["supervisor_cpu_s_spawning"] = _cpu(sup) - cpu0
            _wait(lambda: _all_idle(team, teammates), 300, "teammates did not become idle", 0.5)
            time.sleep(settle)
            mates = _status(team).teammates
            procs = [psutil.Process(m.pid) for m in mates if m.pid]
            sample = random.Random(1).sample(procs, min(USS_SAMPLE, len(procs)))
            uss = [p.memory_full_info().uss for p in sample]
            row["uss_mib_per_teammate"] = sum(uss) / len(uss) / 2**20
            row["uss_gib_team"] = row["uss_mib_per_teammate"] * teammates / 1024
            row["supervisor_rss_mib"] = sup.memory_info().rss / 2**20
            row["supervisor_files"] = sup.num_fds()
            row["supervisor_nofile_soft"] = sup.rlimit(psutil.RLIMIT_NOFILE)[0]

            # A burst of trivial tasks, and messages into the team while it works through them.
            spans: list[trace.Span] = []
            before, cpu0 = _status(team).task_wakes, _cpu(sup)
            # Few and far apart: each is a turn (and a reply) that the burst would otherwise not pay.
            few = max(1, samples // 3)
            sender = threading.Thread(target=_latency, args=(team, mates[-1].name, few, spans, BUSY_PAUSE))
            t0 = time.perf_counter()
            team.tasks.create_many([(f"burst {i}", "", None, None, []) for i in range(burst)])
            sender.start()
            deadline, asked = time.monotonic() + BURST_DEADLINE, list[float]()
            while (done := _completed(team)) < burst and time.monotonic() < deadline:
                _timed_status(team, asked)  # is the supervisor still answering, mid-burst?
                time.sleep(0.25)
            seconds = time.perf_counter() - t0
            sender.join()
            row["burst_tasks"] = burst
            row["burst_completed"] = done  # short of burst: the deadline came first
            row["burst_s"] = seconds
            row["tasks_per_s"] = done / seconds
            for task in team.tasks.list():  # past the deadline: what is left goes, so the team settles
                if task.status == "pending":
                    with contextlib.suppress(AgentTeamsError):  # a lock a crowd holds: leave that one
                        team.tasks.delete(task.id)
            row["wakes_per_task"] = (_status(team).task_wakes - before) / burst
            row["supervisor_cpu_pct_burst"] = 100 * (_cpu(sup) - cpu0) / seconds
            answered = percentiles(asked)  # NaN (no answer) left out, and counted
            row["status_burst_s"] = {
                "asked": len(asked),
                "unanswered": sum(math.isnan(a) for a in asked),
                **{k: answered[k] for k in ("p50", "max")},
            }
            latency = percentiles([s.latency_ms for s in spans])
            row["send_turn_ms"] = {k: latency[k] for k in ("p50", "p90", "p99")}
            row["send_turn_lost"] = few - len(spans)

            # The whole team, idle: messages into it, then its CPU over a window.
            _wait(lambda: _all_idle(team, teammates), 300, "teammates did not settle", 0.5)
            time.sleep(settle)
            spans = []
            _latency(team, mates[-1].name, samples, spans)
            latency = percentiles([s.latency_ms for s in spans])
            row["send_turn_idle_ms"] = {k: latency[k] for k in ("p50", "p90", "p99")}
            row["send_turn_idle_lost"] = samples - len(spans)
            # What a person waits for: `ps` within its row budget, and with every row.
            for key, rows in (("ps_s", busy.DEFAULT_ROWS), ("ps_all_s", None)):
                t0 = time.perf_counter()
                ps.snapshot(str(root), team.name, rows)
                row[key] = time.perf_counter() - t0
            # The same as commands (each a fresh interpreter), the team idle, 1,000 tasks listed.
            row["cli_s"] = {
                "status": _cli_s(root, "status", team.name),
                "task list": _cli_s(root, "task", "list", team.name),
                "ps": _cli_s(root, "ps"),
            }
            _wait(lambda: _all_idle(team, teammates), 300, "teammates did not settle", 0.5)
            time.sleep(2 * settle)
            everyone = [sup, *procs]
            t0 = time.perf_counter()
            cpu0s = [_cpu(p) for p in everyone]
            time.sleep(idle_seconds)
            cpu1s = [_cpu(p) for p in everyone]
            window = time.perf_counter() - t0  # reading thousands of processes' times takes a while too
            per_min = 60.0 / window
            row["idle_s"] = window
            row["idle_team_cpu_s_per_min"] = (sum(cpu1s) - sum(cpu0s)) * per_min
            row["idle_supervisor_cpu_s_per_min"] = (cpu1s[0] - cpu0s[0]) * per_min
            row["idle_cpu_s_per_teammate_min"] = (sum(cpu1s[1:]) - sum(cpu0s[1:])) * per_min / teammates
        finally:
            t0 = time.perf_counter()
            team.down(grace=10, timeout=180)
            row["down_s"] = time.perf_counter() - t0
        return row


def _fits(teammates: int, uss_mib: float) -> tuple[bool, str]:
    need = teammates * uss_mib * MEMORY_HEADROOM / 1024 + 0.5
    free = psutil.virtual_memory().available / 2**30
    return need <= free, f"needs ~{need:.1f} GiB, {free:.1f} GiB available"


def run(quick: bool, max_teammates: int | None = None) -> dict[str, Any]:
    sizes = [n for n in (QUICK_SIZES if quick else SIZES) if max_teammates is None or n <= max_teammates]
    burst = QUICK_BURST if quick else BURST
    idle = QUICK_IDLE_SECONDS if quick else IDLE_SECONDS
    samples = QUICK_SAMPLES if quick else SAMPLES
    rows: list[dict[str, Any]] = []
    load = os.getloadavg()  # how quiet the machine was: other work inflates every figure here
    uss = 8.0  # MiB, until the first size has measured it
    for n in sizes:
        fits, why = _fits(n, uss)
        if not fits:
            rows.append({"teammates": n, "skipped": f"not enough memory: {why}"})
            continue
        row: dict[str, Any] = {}
        try:
            rows.append(measure(n, burst, idle, samples, settle=0.2 if quick else 1.0, row=row))
        except (
            TimeoutError,
            AgentTeamsError,
            MemoryFloor,
        ) as exc:  # a size too large for this host: say so, stop
            rows.append({"teammates": n, "skipped": f"failed: {exc}", "partial": row})
            break
        uss = rows[-1]["uss_mib_per_teammate"]
    hard = psutil.Process(os.getpid()).rlimit(psutil.RLIMIT_NOFILE)[1]
    return {
        "rows": rows,
        "nofile_hard": hard,
        "cores": os.cpu_count(),
        "turn_caps": {"cpu_bound": turn_caps()[True]._asdict(), "api": turn_caps()[False]._asdict()},
        "load_average": {"before": load, "after": os.getloadavg()},
        "targets": _targets(rows),
    }


def _targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    done = [r for r in rows if "skipped" not in r]
    if not done:
        return []
    big = done[-1]
    return [
        {
            "target": f"{big['teammates']:,} teammates spawned in one team (the largest size run)",
            "value": big["teammates"],
            "met": big["teammates"] >= 2000,
        },
        {
            "target": f"send → turn p50 ≤ 2 ms into an idle team of {big['teammates']:,}",
            "value": big["send_turn_idle_ms"]["p50"],
            "met": big["send_turn_idle_ms"]["p50"] <= 2,
        },
    ]


# ---------------------------------------------------------------- table and plot


def table(result: dict[str, Any]) -> Table:
    t = Table(title="how cost grows with the team (offline teammates, one host)")
    cols = (
        "teammates",
        "spawn ms/mate",
        "USS MiB/mate",
        "sup RSS MiB",
        "sup files",
        "sup CPU s (spawn)",
        "tasks/s",
        "sup CPU % (burst)",
        "send→turn p50 ms busy / idle",
        "idle CPU s/min (team)",
        "idle CPU s/min (sup)",
        "ps s (40 rows / all)",
        "status mid-burst s (p50 / max)",
        "CLI s (status / task list / ps)",
        "down s",
    )
    for col in cols:
        t.add_column(col, justify="right")
    for r in result["rows"]:
        if "skipped" in r:
            t.add_row(f"{r['teammates']:,}", r["skipped"], *[""] * (len(cols) - 2))
            continue
        t.add_row(
            f"{r['teammates']:,}",
            f"{r['spawn_ms_per_teammate']:.1f}",
            f"{r['uss_mib_per_teammate']:.1f}",
            f"{r['supervisor_rss_mib']:.0f}",
            f"{r['supervisor_files']:,}",
            f"{r['supervisor_cpu_s_spawning']:.1f}",
            f"{r['tasks_per_s']:.0f}"
            + (
                ""
                if r.get("burst_completed", r["burst_tasks"]) == r["burst_tasks"]
                else f" ({r['burst_completed']:,} done)"
            ),
            f"{r['supervisor_cpu_pct_burst']:.0f}",
            f"{r['send_turn_ms']['p50']:.1f} / {r['send_turn_idle_ms']['p50']:.2f}",
            f"{r['idle_team_cpu_s_per_min']:.1f}",
            f"{r['idle_supervisor_cpu_s_per_min']:.2f}",
            f"{r['ps_s']:.2f} / {r['ps_all_s']:.2f}",
            _status_cell(r.get("status_burst_s")),
            " / ".join(f"{v:.2f}" for v in r["cli_s"].values()) if "cli_s" in r else "",
            f"{r['down_s']:.1f}",
        )
    return t


def _status_cell(asked: dict[str, Any] | None) -> str:
    if not asked:
        return ""
    missed = f", {asked['unanswered']} unanswered" if asked["unanswered"] else ""
    return f"{asked['p50']:.2f} / {asked['max']:.2f}{missed}"


PANELS = (
    ("spawn_ms_per_teammate", "spawn, ms per teammate"),
    ("uss_mib_per_teammate", "USS per teammate, MiB"),
    ("supervisor_rss_mib", "supervisor RSS, MiB"),
    ("supervisor_cpu_pct_burst", "supervisor CPU during the burst, %"),
    ("tasks_per_s", "burst of trivial tasks, tasks/s"),
    ("send_turn", "send → turn p50, ms: busy team, idle team"),
    ("idle_team_cpu_s_per_min", "idle team CPU, CPU-s per minute"),
    ("ps", "what a person waits for, s"),
    ("down_s", "agentteams down, s"),
)


def plot(plt: Any, result: dict[str, Any], out: Path) -> Path | None:
    # A size that failed part-way still has what it measured before (its "partial" row).
    rows = [
        r if "skipped" not in r else {**r.get("partial", {}), "teammates": r["teammates"]}
        for r in result["rows"]
    ]
    rows = [r for r in rows if "spawn_ms_per_teammate" in r]
    if not rows:
        return None
    fig, axes = plt.subplots(3, 3, figsize=(14, 10))
    sizes = [r["teammates"] for r in rows]

    def line(ax: Any, value: Any, **style: Any) -> None:
        points = [(r["teammates"], value(r)) for r in rows if value(r) is not None]
        ax.plot([p[0] for p in points], [p[1] for p in points], **style)

    for ax, (key, title) in zip(axes.flat, PANELS, strict=True):
        if key == "send_turn":
            line(ax, lambda r: r.get("send_turn_ms", {}).get("p50"), marker="o", label="busy")
            line(ax, lambda r: r.get("send_turn_idle_ms", {}).get("p50"), marker="s", label="idle")
            ax.set_yscale("log")
            ax.legend(fontsize=7)
        elif key == "ps":
            line(ax, lambda r: r.get("ps_s"), marker="o", label="ps, 40 rows (API)")
            line(ax, lambda r: r.get("ps_all_s"), marker="s", label="ps, every row (API)")
            line(
                ax,
                lambda r: r.get("status_burst_s", {}).get("max"),
                marker="^",
                label="status mid-burst, max",
            )
            line(ax, lambda r: r.get("cli_s", {}).get("task list"), marker="v", label="agentteams task list")
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=7)
        else:
            line(ax, lambda r, key=key: r.get(key), marker="o")
            ax.set_ylim(bottom=0)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [f"{n:,}" for n in sizes], fontsize=7, rotation=30)
        ax.set_title(title, fontsize=9)
        ax.grid(True, alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("teammates")
    fig.suptitle("how cost grows with the team (one host, offline teammates)")
    path = out / "scale.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
