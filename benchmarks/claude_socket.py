"""A message to a real ``claude`` 2.1.330 teammate: send → its turn starts (the local
Messages API server sees the request that carries the message), through its own socket
(the courier) against its inbox poll (the team up with ``--wake poll``: Claude Code's own
behaviour), interleaved in the same run. Each message is also counted in the teammate's
conversation: delivered once, never twice.

It runs the binary that ``make interop`` installs (``~/.cache/agentteams-cc/2.1.330``, or
``$AGENTTEAMS_CLAUDE_BIN``) and is skipped, with a note, when that is not there. Not part of
``bench all --quick``."""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.common import env, percentiles, scratch
from ipc import claude_code
from ipc.courier import courier_path
from ipc.options import TeammateOptions
from supervisor import Team
from tests.claude_code import CACHE, CURRENT_VERSION, environment

__all__ = ["CURRENT_VERSION", "run"]
from tests.fake_anthropic import FakeAnthropic, Reply, text

KEY = "sk-ant-test-0123456789abcdefghijklmnop"
MODES = ("socket", "poll")


def binary() -> Path | None:
    """The 2.1.330 binary if it is here (never installed from a benchmark)."""
    given = os.environ.get("AGENTTEAMS_CLAUDE_BIN", "")
    candidates = [Path(given)] if given else []
    candidates.append(CACHE / CURRENT_VERSION / "node_modules/@anthropic-ai/claude-code-linux-x64/claude")
    for path in candidates:
        if path.is_file() and claude_code.has_socket(claude_code.version([str(path)])):
            return path
    return None


class Requests:
    """Every request the server sees, with the time it arrived."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, str]] = []
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any], n: int) -> Reply:
        body = json.dumps(request.get("messages", []))
        with self.lock:
            self.seen.append((time.time(), body))
        return text("ok")

    def first(self, marker: str, since: int = 0, timeout: float = 0.0) -> float | None:
        """When the first request after the ``since``-th carrying ``marker`` arrived,
        waiting up to ``timeout`` for it."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                found = next((t for t, body in self.seen[since:] if marker in body), None)
            if found is not None or time.monotonic() > deadline:
                return found
            time.sleep(0.002)

    def count(self) -> int:
        with self.lock:
            return len(self.seen)

    def latest_with(self, marker: str) -> str:
        with self.lock:
            return next((body for _, body in reversed(self.seen) if marker in body), "")


def start(base: Path, mode: str) -> Team:
    """A team with one claude teammate: woken through its socket, or by its poll alone."""
    work = base / mode
    work.mkdir()
    team = Team.create(f"cc-{mode}", root=base / f"root-{mode}", cwd=str(work))
    team.up(wake="zmq" if mode == "socket" else "poll")
    options = TeammateOptions(
        name="cc", prompt=f"start {mode}", model="claude-code:sonnet", permission_mode="bypassPermissions"
    )
    team.start_teammate(options)
    return team


def measure(quick: bool, executable: Path) -> dict[str, Any]:
    samples = 5 if quick else 40
    requests = Requests()
    latencies: dict[str, list[float]] = {m: [] for m in MODES}
    sends: dict[str, list[float]] = {m: [] for m in MODES}
    lost = {m: 0 for m in MODES}
    duplicated = {m: 0 for m in MODES}
    once = {m: 0 for m in MODES}  # in the teammate's conversation exactly once
    with scratch() as base, FakeAnthropic(requests) as api:
        claude_env = environment(base, api.url, ANTHROPIC_API_KEY=KEY, AGENTTEAMS_CLAUDE_BIN=str(executable))
        teams: dict[str, Team] = {}
        with env(**claude_env):
            try:
                for mode in MODES:
                    teams[mode] = start(base, mode)
                for mode in MODES:
                    requests.first(f"start {mode}", timeout=90)  # its first turn, from the poll
                _wait(lambda: courier_path(teams["socket"].paths.runtime_dir(), "cc").exists(), 30)
                time.sleep(1.5)
                for i in range(samples):
                    for mode in random.sample(MODES, 2):
                        marker = f"bench {mode} message {i}"
                        since = requests.count()
                        sent = time.time()
                        teams[mode].send("cc", marker, summary="bench")
                        sends[mode].append((time.time() - sent) * 1000)  # the send itself (and hand-over)
                        arrived = requests.first(marker, since, timeout=10)
                        if arrived is None:
                            lost[mode] += 1
                            continue
                        latencies[mode].append((arrived - sent) * 1000)
                        time.sleep(0.3 + random.random() * 0.7)  # the turn ends; a fresh poll phase
                time.sleep(2.5)  # two more polls: nothing may come again
                for mode in MODES:
                    for i in range(samples):
                        marker = f"bench {mode} message {i}\\n"  # as the JSON of the conversation holds it
                        copies = requests.latest_with(marker).count(marker)
                        duplicated[mode] += copies > 1
                        once[mode] += copies == 1
            finally:
                for team in teams.values():
                    team.down(grace=5)
                    shutil.rmtree(team.paths.runtime_dir(), ignore_errors=True)
    rows: list[dict[str, Any]] = [
        {
            "path": f"claude {CURRENT_VERSION} teammate",
            "wake": "socket (courier)" if mode == "socket" else "poll (Claude Code)",
            "n": len(latencies[mode]),
            **percentiles(latencies[mode]),
            "lost": lost[mode],
            "duplicated": duplicated[mode],
            "once": once[mode],
            "send_p50": percentiles(sends[mode])["p50"],
            "values": latencies[mode],
        }
        for mode in MODES
    ]
    socket_p50, poll_p50 = (percentiles(latencies[mode])["p50"] for mode in MODES)
    return {
        "rows": rows,
        "targets": [
            {
                "target": "claude teammate: socket p50 below half the poll's, same run",
                "value": socket_p50 / poll_p50 if poll_p50 else float("nan"),
                "met": bool(poll_p50) and socket_p50 <= poll_p50 / 2,
            },
            {
                "target": "claude teammate: every message in its conversation exactly once (fraction)",
                "value": sum(once.values()) / (samples * len(MODES)),
                "met": all(once[m] == samples for m in MODES),
            },
        ],
    }


def _wait(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def run(quick: bool) -> dict[str, Any]:
    executable = binary()
    if executable is None:
        return {
            "skipped": f"NOT MEASURED: Claude Code {CURRENT_VERSION} is not installed "
            f"(make interop installs it into {CACHE}, or set AGENTTEAMS_CLAUDE_BIN)",
            "rows": [],
            "targets": [],
        }
    return measure(quick, executable)
