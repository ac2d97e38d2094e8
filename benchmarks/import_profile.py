"""Where a command's start-up goes: ``python -X importtime`` of a whole `agentteams send`,
its import time summed by where the modules come from (the standard library, each
third-party package, the editable-install finder, this project's packages), the median of
several runs. Run against any checkout and interpreter, to compare two:

    python -m benchmarks.import_profile OUT.json PYTHON [PYTHON...] [--runs N]

(the cli suite runs it for this checkout)."""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

OURS = ("ipc", "supervisor", "agentproc")


def group_of(module: str) -> str:
    top = module.split(".")[0]
    if top in OURS:
        return ".".join(module.split(".")[:2]) if top == "supervisor" else top
    if top.startswith("__editable__"):
        return "editable-install finder"
    if top in sys.stdlib_module_names or top.startswith("_") or top in ("site", "sitecustomize"):
        return "standard library"
    return top


def parse(stderr: str) -> dict[str, float]:
    """ms of import time (each module's own) by group, and the module count."""
    groups: dict[str, float] = defaultdict(float)
    count = 0
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _, name = line[len("import time:") :].split("|")
        groups[group_of(name.strip())] += int(own) / 1000
        count += 1
    return {**groups, "modules": count}


def _team(root: Path, python: str, env: dict[str, str]) -> None:
    code = (
        "import sys; from ipc import TeamConfigStore; s = TeamConfigStore(sys.argv[1], 't'); "
        "s.create('profile', cwd=sys.argv[1]); s.add_member('bob')"
    )
    subprocess.run([python, "-c", code, str(root)], check=True, env=env, cwd=root)


def profile(python: str, runs: int = 7) -> dict[str, Any]:
    """The median import profile of ``python -m supervisor.cli send`` (a team of one member;
    no supervisor: the import graph is the same, the ring finds no one to wake)."""
    return profiles([python], runs)[0]


def profiles(pythons: list[str], runs: int = 7) -> list[dict[str, Any]]:
    """:func:`profile` of each install, their runs taken in turn (A, B, A, B…) so that
    whatever else the machine does weighs on each alike."""
    pythons = [os.path.abspath(p) for p in pythons]  # not resolved: a venv's python links out of it
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    runs_of: dict[str, list[tuple[dict[str, float], float, float]]] = {p: [] for p in pythons}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _team(root, pythons[0], env)
        for _ in range(runs + 1):  # the first: byte-compile and warm up, not counted
            for python in pythons:
                argv = [python, "-X", "importtime", "-m", "supervisor.cli", "--root", str(root)]
                argv += ["send", "t", "bob", "hello", "--summary", "profile"]
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                # From the scratch root: `-m` puts the working directory first on sys.path.
                done = subprocess.run(argv, check=True, env=env, cwd=root, capture_output=True, text=True)
                wall = (time.perf_counter() - t0) * 1e3
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3
                runs_of[python].append((parse(done.stderr), wall, cpu))
    return [_summary(python, runs_of[python][1:]) for python in pythons]


def _summary(python: str, taken: list[tuple[dict[str, float], float, float]]) -> dict[str, Any]:
    samples = [t[0] for t in taken]
    names = {k for s in samples for k in s}
    medians = {k: statistics.median(s.get(k, 0.0) for s in samples) for k in names}
    total = statistics.median(sum(v for k, v in s.items() if k != "modules") for s in samples)
    groups = sorted(((k, round(v, 2)) for k, v in medians.items() if k != "modules"), key=lambda kv: -kv[1])
    return {
        "python": python,
        "runs": len(taken),
        "total_ms": round(total, 2),
        "modules": medians["modules"],
        "groups": groups,
        # the whole process, under -X importtime (which adds its own cost): wall and CPU
        "wall_ms": round(statistics.median(t[1] for t in taken), 2),
        "cpu_ms": round(statistics.median(t[2] for t in taken), 2),
        "load_average": os.getloadavg(),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.import_profile")
    parser.add_argument("out", type=Path)
    parser.add_argument("pythons", nargs="+", help="the interpreters of the installs to profile")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    result = profiles(args.pythons, args.runs)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
