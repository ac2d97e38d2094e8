"""How long stopping takes, as a person meets it on the command line: `down` of an idle and
of a busy team, Ctrl-C of `run`, `lead` and `chat` while a teammate runs a long command, and
how far `lead --timeout` overshoots its limit. Each figure is from the keystroke (the signal,
or the start of a `down`, whose interpreter start is included) to the command's exit.

`lead --timeout` has three rows. Its limit counts from the lead agent's start, which the lead
reports (``started_ns``, wall-clock): the stop is the command's exit past that start plus the
limit, and the part of it before the lead's loop ended is its ``seconds`` past the limit (the
rest: the lead's process exiting, the team's supervisor brought down, the command's exit).
Beside them, the exit past the command's own start plus the limit, which also holds the
interpreter's start, making the team, starting its supervisor and the lead's process."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.common import scratch
from ipc.errors import AgentTeamsError
from ipc.replies import LeadResult
from supervisor import Team

AGENTTEAMS = [sys.executable, "-m", "supervisor.cli"]
LONG = "sleep 60"
STOP_TARGET_S = 1.0
LIMIT = 2.0  # s: the `lead --timeout` measured
WHOLE = "lead --timeout {limit:g}: exit past the command's start + the limit (start-up included)"
HUNG = -1  # the exit code recorded for a command still running a minute after its Ctrl-C


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGENTTEAMS, *args, "--root", str(root)], capture_output=True, text=True, cwd=root, timeout=120
    )


def _until(predicate: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the team did not get there")
        time.sleep(0.05)


def _tool_running(team: Team) -> bool:
    try:
        return team.is_up() and any(m.children for m in team.ps().teammates)
    except Exception:  # starting or stopping: look again
        return False


def _idle(team: Team, count: int) -> bool:
    mates = team.status().teammates
    return len(mates) == count and all(m.state == "idle" for m in mates)


def _remove(team: Team) -> None:
    """The measured command's team, if it left one. A lead that made its team removes it
    as it exits: what is gone by the time we look is not an error."""
    with contextlib.suppress(AgentTeamsError):
        if team.store.exists():
            team.down(grace=1)
            team.delete(force=True)


def down(busy: bool) -> tuple[float, int]:
    """`agentteams down` of a team of two teammates, one running a long command if ``busy``."""
    with scratch() as root:
        team = Team.create("t", root=root, cwd=str(root))
        team.up()
        try:
            team.spawn("a", prompt="")
            team.spawn("b", prompt="")
            _until(lambda: _idle(team, 2))
            if busy:
                team.tasks.create("wait", metadata={"command": LONG})
                _until(lambda: _tool_running(team))
            started = time.perf_counter()
            done = _cli(root, "down", "t")
            return time.perf_counter() - started, done.returncode
        finally:
            team.down(grace=1)
            team.delete(force=True)


def interrupt(command: str) -> tuple[float, int]:
    """Ctrl-C (SIGINT to the foreground process) of ``run``, ``lead`` or ``chat`` while a
    teammate runs a long command; seconds to its exit, and its exit code."""
    with scratch() as root:
        if command == "run":
            scenario = root / "s.toml"
            scenario.write_text(
                '[team]\nname = "t"\n[[teammates]]\nname = "w"\n'
                f'[[tasks]]\nkey = "a"\nsubject = "Wait"\ncommand = "{LONG}"\n'
            )
            argv = ["run", str(scenario)]
        elif command == "chat":  # the goal typed in; the input stays open, as a terminal's does
            (root / "plan.md").write_text(f"Teammates: 1\n1. Wait: `{LONG}`\n")
            argv = ["chat", "t", "--allow-pipe"]
        else:
            argv = ["lead", "t", "--prompt", f"Teammates: 1\n1. Wait: `{LONG}`"]
        proc = subprocess.Popen(
            [*AGENTTEAMS, *argv, "--root", str(root)],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None
        if command == "chat":
            proc.stdin.write(b"Plan file: plan.md\n")
            proc.stdin.flush()
        team = Team("t", root)
        try:
            _until(lambda: _tool_running(team))
            started = time.perf_counter()
            proc.send_signal(signal.SIGINT)
            try:
                code = proc.wait(60)
            except subprocess.TimeoutExpired:
                code = HUNG  # recorded, not raised: a stop that hangs is the finding
            return time.perf_counter() - started, code
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.stdin.close()
            _remove(team)


def lead_timeout(limit: float) -> dict[str, tuple[float, int]]:
    """`lead --timeout LIMIT` with a step that takes longer: seconds of the command's exit past
    the lead's deadline (the stop), and past the command's start plus the limit (the whole)."""
    with scratch() as root:
        started_ns = time.time_ns()
        done = _cli(
            root,
            "lead",
            "t",
            "--prompt",
            f"Teammates: 1\n1. Wait: `{LONG}`",
            "--timeout",
            str(limit),
            "--json",
        )
        ended_ns = time.time_ns()
        _remove(Team("t", root))
    try:
        result = msgspec.json.decode(done.stdout, type=LeadResult)
    except msgspec.DecodeError:
        result = None
    clock = result.started_ns if result is not None else 0
    if result is None or not clock:
        raise RuntimeError(
            f"the lead reported no clock start (exit {done.returncode}): {done.stderr.strip()}"
        )
    limit_ns = int(limit * 1e9)
    return {
        WHOLE.format(limit=limit): ((ended_ns - started_ns - limit_ns) / 1e9, done.returncode),
        f"lead --timeout {limit:g}: the stop, exit past the lead's deadline": (
            (ended_ns - clock - limit_ns) / 1e9,
            done.returncode,
        ),
        # The part of that stop before the lead's loop ended: its timer's own lateness.
        f"lead --timeout {limit:g}: of which the lead's loop ends past its deadline": (
            result.seconds - limit,
            done.returncode,
        ),
    }


def run(quick: bool) -> dict[str, Any]:
    n = 1 if quick else 5
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        # Started in the background (`nohup`, `&`): SIGINT is ignored here, and so it would be
        # in every command started from here, which would then never see the Ctrl-C timed.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    load = os.getloadavg()  # how busy the machine was: other work inflates every figure here
    measures: list[Callable[[], dict[str, tuple[float, int]]]] = [
        lambda: {"down, 2 idle teammates": down(busy=False)},
        lambda: {"down, a teammate running a command": down(busy=True)},
        lambda: {"Ctrl-C of run, a teammate running a command": interrupt("run")},
        lambda: {"Ctrl-C of lead, a teammate running a command": interrupt("lead")},
        lambda: {"Ctrl-C of chat, a teammate running a command": interrupt("chat")},
        lambda: lead_timeout(LIMIT),
    ]
    samples: dict[str, list[tuple[float, int]]] = {}
    for measure in measures:
        for _ in range(n):
            for case, sample in measure().items():
                samples.setdefault(case, []).append(sample)
    rows: list[dict[str, Any]] = []
    for case, got in samples.items():
        seconds = sorted(s for s, _ in got)
        rows.append(
            {
                "case": case,
                "n": n,
                "median_s": round(seconds[len(seconds) // 2], 3),
                "max_s": round(seconds[-1], 3),
                "exit_codes": sorted({c for _, c in got}),
            }
        )
    # The whole `lead --timeout` figure is start-up as much as stop: not a stop.
    whole = WHOLE.format(limit=LIMIT)
    worst = max(float(r["max_s"]) for r in rows if r["case"] != whole)
    targets = [
        {
            "target": f"every stop above ≤ {STOP_TARGET_S:g} s (a `down`'s interpreter start included; "
            "lead --timeout from its deadline)",
            "value": worst,
            "met": worst <= STOP_TARGET_S,
        }
    ]
    return {"rows": rows, "targets": targets, "load_average": {"before": load, "after": os.getloadavg()}}
