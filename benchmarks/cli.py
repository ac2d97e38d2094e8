"""A command-line process that sends one message or creates one task, as a script calling
`agentteams` in a loop meets it: its wall time (start to exit), and how long until the
recipient's turn starts or an idle teammate has claimed the task. Beside them, in the same
run, the floors it cannot go under: the interpreter starting bare (``-S``), starting with
the environment's site packages, and importing the libraries a send needs at all (ZeroMQ
for the doorbell, msgspec for the files, cryptography for the signature)."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.table import Table

from benchmarks import import_profile
from benchmarks.common import env, percentiles, scratch, team_of
from ipc import trace

TARGET_MS = 50.0
LIBRARIES = "import zmq, msgspec; from cryptography.hazmat.primitives.asymmetric import ed25519"
QUICK_LIBRARIES = "import argparse, json, _socket"
PATHS = {"": False, " (resident door)": True}  # a row's suffix: whether the door may answer


def _agentteams() -> list[str]:
    """The console script a person runs, beside this interpreter (else ``-m``)."""
    script = Path(sys.executable).parent / "agentteams"
    return [str(script)] if script.exists() else [sys.executable, "-m", "supervisor.cli"]


def _environ(door: bool = False) -> dict[str, str]:
    # As installed: byte-compiled modules (a development shell may forbid writing them,
    # which would time the compiler, not the command), traces on for the claim and the turn;
    # the full path, or the resident door's when the team's door answers.
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environ["AGENTTEAMS_TRACE"] = "1"
    environ["AGENTTEAMS_QUICK_DOOR"] = "1" if door else "0"
    return environ


def _wall(argv: list[str], door: bool = False) -> tuple[float, int, str, float]:
    """ms from start to exit, the start (ns since the epoch), what it printed, and the ms of
    CPU it used (user + system: what other work on the machine does not inflate)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time_ns()
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=_environ(door), check=True)
    wall = (time.perf_counter() - t0) * 1e3
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3
    return wall, started, done.stdout, cpu


def floors(samples: int) -> list[dict[str, Any]]:
    py = sys.executable
    cases = {
        "interpreter, bare (python -S)": [py, "-S", "-c", "pass"],
        "interpreter with site packages (python -c pass)": [py, "-c", "pass"],
        "+ zmq, msgspec, cryptography (what a send needs)": [py, "-c", LIBRARIES],
        "+ argparse, json, _socket (what the resident door's client needs)": [py, "-c", QUICK_LIBRARIES],
    }
    rows = []
    for what, argv in cases.items():
        _wall(argv)  # warm the page cache and the byte-code
        runs = [_wall(argv) for _ in range(samples)]
        rows.append(
            {"what": what, **percentiles([r[0] for r in runs]), "cpu": percentiles([r[3] for r in runs])}
        )
    return rows


def _taken(team: Any, ours: Callable[[trace.Span], bool], timeout: float = 10.0) -> int:
    """When the recipient took the message or task ``ours`` picks (ns), 0 if not in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for span in trace.spans(team.paths):
            if ours(span) and span.taken:
                return span.taken
        time.sleep(0.0005)
    return 0


def commands(samples: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``send`` to an idle teammate and ``task create`` with 4 idle teammates, each on the
    full path and through the team's resident door: wall, and from the process's start to
    the recipient's turn / the claim. With the resident path's import profile."""
    rows = []
    with scratch() as root, env(AGENTTEAMS_TRACE="1"), team_of(root, 4) as (team, names):
        base = [*_agentteams(), "--root", str(root), "--json"]
        send = [*base, "send", team.name, names[0], "ping", "--summary", "bench"]
        create = [*base, "task", "create", team.name]

        def sent_to(started: int, out: str) -> Callable[[trace.Span], bool]:
            return lambda span: span.agent == names[0] and span.sent >= started

        def claimed(started: int, out: str) -> Callable[[trace.Span], bool]:
            key = f"task-{json.loads(out)['id']}"
            return lambda span: span.msg_id == key

        cases = [("send", send, sent_to), ("task create", [*create, "bench"], claimed)]
        for (what, argv, match), (suffix, door) in [(c, p) for p in PATHS.items() for c in cases]:
            walls, cpus, reached = [], [], []
            for i in range(samples + 2):
                time.sleep(0.05)  # every teammate idle again
                wall, started, out, cpu = _wall(argv, door)
                taken = _taken(team, match(started, out))
                if i >= 2:  # the first two warm the page cache and the byte-code
                    walls.append(wall)
                    cpus.append(cpu)
                    reached.append((taken - started) / 1e6 if taken else float("nan"))
            lost = sum(1 for r in reached if r != r)
            rows.append(
                {
                    "command": what + suffix,
                    "path": "resident door" if door else "full",
                    "wall": percentiles(walls),
                    "cpu": percentiles(cpus),
                    "reached": percentiles(reached),
                    "lost": lost,
                }
            )
        quick_imports = _resident_imports([*create, "profile"], 5 if samples <= 10 else 9)
    return rows, quick_imports


def _resident_imports(argv: list[str], runs: int) -> dict[str, Any]:
    """What a `task create` through the resident door imports (``-X importtime``, by where
    the modules come from; median of ``runs``)."""
    full = [sys.executable, "-X", "importtime", *(argv[1:] if argv[0] == sys.executable else argv)]
    parsed = []
    for _ in range(runs + 1):  # the first byte-compiles
        done = subprocess.run(full, capture_output=True, text=True, env=_environ(True), check=True)
        parsed.append(import_profile.parse(done.stderr))
    parsed = parsed[1:]
    groups = {k for p in parsed for k in p if k != "modules"}
    medians = sorted(
        ((g, statistics.median(p.get(g, 0.0) for p in parsed)) for g in groups), key=lambda x: -x[1]
    )
    return {
        "runs": runs,
        "groups": medians,
        "modules": statistics.median(p["modules"] for p in parsed),
        "total_ms": sum(ms for _, ms in medians),
    }


def run(quick: bool) -> dict[str, Any]:
    n = 10 if quick else 40
    load = os.getloadavg()  # how quiet the machine was: other work inflates every figure here
    floor_rows = floors(n)
    rows, quick_imports = commands(n)
    return {
        "floors": floor_rows,
        "rows": rows,
        "imports": import_profile.profile(sys.executable, 5 if quick else 9),
        "resident_imports": quick_imports,
        "load_average": {"before": load, "after": os.getloadavg()},
        "targets": targets(rows),
    }


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each path's wall times and create → claimed against the target: one row each."""
    send, create, quick_send, quick_create = rows
    goals = [
        ("a CLI send through the resident door: wall", quick_send["wall"]),
        ("a CLI task create through the resident door: wall", quick_create["wall"]),
        ("CLI task create → claimed through the resident door", quick_create["reached"]),
        ("a CLI process that sends a message, full path: wall", send["wall"]),
        ("a CLI process that creates a task, full path: wall", create["wall"]),
        ("CLI task create → claimed (process start included), full path:", create["reached"]),
    ]
    return [
        {"target": f"{what} p50 ≤ {TARGET_MS:g} ms", "value": p["p50"], "met": p["p50"] <= TARGET_MS}
        for what, p in goals
    ]


def tables(result: dict[str, Any]) -> list[Table]:
    out = [_walls(result), _imports(result["imports"], "`agentteams send`, the full path")]
    if "resident_imports" in result:
        out.append(_imports(result["resident_imports"], "`agentteams task create` through the resident door"))
    return out


def _imports(profile: dict[str, Any], what: str) -> Table:
    t = Table(
        title=f"{what}: import time by origin, median of {profile['runs']} "
        f"({profile['modules']:.0f} modules, {profile['total_ms']:.1f} ms)"
    )
    t.add_column("from")
    t.add_column("ms", justify="right")
    for name, ms in profile["groups"][:12]:
        t.add_row(name, f"{ms:.1f}")
    return t


def _walls(result: dict[str, Any]) -> Table:
    t = Table(title="a CLI process: wall time and what it reaches, with the floors (ms)")
    for col in ("what", "wall p50", "p90", "CPU p50", "→ turn / claimed p50", "p90", "lost"):
        t.add_column(col, justify="left" if col == "what" else "right")
    for r in result["floors"]:
        t.add_row(r["what"], f"{r['p50']:.1f}", f"{r['p90']:.1f}", f"{r['cpu']['p50']:.1f}", "", "", "")
    for r in result["rows"]:
        w, x = r["wall"], r["reached"]
        t.add_row(
            f"agentteams {r['command']}",
            f"{w['p50']:.1f}",
            f"{w['p90']:.1f}",
            f"{r['cpu']['p50']:.1f}",
            f"{x['p50']:.1f}",
            f"{x['p90']:.1f}",
            str(r["lost"]),
        )
    return t
