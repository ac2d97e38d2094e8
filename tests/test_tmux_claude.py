"""A Claude Code 2.1.38 teammate in a tmux pane (``--backend tmux --model claude-code``), with
the real tmux and the real ``claude`` against the local Messages API: Claude Code's own
screen is the pane's, the teammate does a task from the task list, and a kill -9 anywhere
leaves no pane and no process. Each test on a tmux server of its own, killed at the end."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipc.options import TeammateOptions
from supervisor import Team
from tests.claude_code import SEEDS_VERSION, claude_code, environment
from tests.fake_anthropic import FakeAnthropic, Reply, text, tool_uses
from tests.runtime_helpers import alive, nothing_left_under, processes_under, wait_for

pytestmark = [
    pytest.mark.tmux,  # make test-tmux, which CI runs
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def tmux(server: str, *args: str, ok: bool = True) -> str:
    result = subprocess.run(["tmux", "-L", server, *args], capture_output=True, text=True, timeout=10)
    if ok:
        assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def panes(server: str) -> set[str]:
    return set(tmux(server, "list-panes", "-a", "-F", "#{pane_id}", ok=False).split())


def screen(server: str, pane: str) -> str:
    return tmux(server, "capture-pane", "-p", "-t", pane, ok=False)


@pytest.fixture
def server() -> Iterator[str]:
    name = f"at-test-{secrets.token_hex(4)}"
    yield name
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True, timeout=10)
    socket_dir = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
    (socket_dir / name).unlink(missing_ok=True)


def script(out: Path) -> Any:
    """The teammate's model: run its task (write ``out``), complete it, approve a shutdown."""

    def reply(request: dict[str, Any], n: int) -> Reply:
        tools = {t.get("name", "") for t in request.get("tools", [])}
        if "SendMessage" not in tools:
            return text("ok")  # Claude Code's side questions (topic, title)
        messages = request.get("messages", [])
        used = {
            b["id"]
            for m in messages
            if m["role"] == "assistant" and isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        }
        last = str(messages[-1]) if messages else ""
        asked = re.search(r"(shutdown-\d+@cc)", last)
        if asked and "bye" not in used:
            answer = {"type": "shutdown_response", "request_id": asked[1], "approve": True}
            return tool_uses(("bye", "SendMessage", answer))
        if "work" not in used and "#1" in str(messages):
            return tool_uses(
                ("work", "Bash", {"command": f"echo from-the-pane > {out}", "description": "write it"}),
                ("done", "TaskUpdate", {"taskId": "1", "status": "completed"}),
            )
        return text("idle")

    return reply


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Claude Code 2.1.38 against the local Messages API (in the team's environment)."""
    claude = claude_code(SEEDS_VERSION)
    folder = tmp_path / "work"
    folder.mkdir()
    with FakeAnthropic(script(folder / "out.txt")) as api:
        for key, value in environment(tmp_path, api.url).items():
            if key != "PATH":
                monkeypatch.setenv(key, value)
        monkeypatch.setenv("AGENTTEAMS_CLAUDE_BIN", str(claude.executable))
        yield folder


def claude_pids(team: Team) -> list[int]:
    return [c.pid for m in team.ps().teammates for c in m.children if "claude" in c.cmdline.split(" ")[0]]


def start(team: Team) -> tuple[str, int]:
    """cc, a `claude` teammate in a pane: its pane id and the pid the supervisor watches."""
    reply = team.start_teammate(
        TeammateOptions(
            name="cc",
            prompt="Do task #1.",
            model="claude-code",
            backend="tmux",
            permission_mode="bypassPermissions",
        )
    )
    member = team.config().member("cc")
    assert member is not None and member.backend_type == "tmux" and member.model == "claude-code:sonnet"
    assert member.tmux_pane_id.startswith("%")
    return member.tmux_pane_id, reply.pid or 0


def test_a_claude_teammate_shows_claude_codes_screen_in_its_pane_and_does_its_task(
    work: Path, tmp_path: Path, server: str
) -> None:
    root = tmp_path / "root"
    team = Team.create("cc-team", root=root, cwd=str(work))
    team.up(tmux_server=server)
    try:
        team.tasks.create("Write out.txt", "write it")
        team.tasks.claim("1", "team-lead")  # held until it is cc's
        pane, pid = start(team)
        assert tmux(server, "display", "-p", "-t", pane, "#{pane_pid}") == str(pid)
        team.tasks.update("1", owner="cc")
        wait_for(lambda: team.tasks.get("1").status == "completed", timeout=90)
        assert (work / "out.txt").read_text() == "from-the-pane\n"
        # Claude Code's own TUI, drawn in the pane: its banner, its prompt box named for the
        # teammate, its permission-mode line; and what a person types there reaches it.
        parts = ["Bash(echo from-the-pane", "Claude Code v2.1.38", "Task #1 assigned by team-lead", "@cc"]
        parts += ["bypass permissions on"]  # (one look: the TUI redraws, a capture may catch it between)
        wait_for(lambda: all(part in screen(server, pane) for part in parts), timeout=30)
        tmux(server, "send-keys", "-t", pane, "-l", "typed by a person")
        typed = re.compile(r"❯\s+typed by a person")  # its prompt box (it pads with a no-break space)
        wait_for(lambda: typed.search(screen(server, pane)), timeout=30)
        status = team.status().teammate("cc")
        assert status is not None and status.backend == "tmux" and status.pid == pid
        assert claude_pids(team), "claude runs under the teammate the supervisor watches"
        stopped = team.shutdown("cc", grace=30)  # Claude Code answers the request itself
        assert stopped.stopped and team.config().member("cc") is None
        wait_for(lambda: pane not in panes(server), timeout=30)
    finally:
        team.down()
    nothing_left_under(root)


def test_kill_9_of_a_claude_teammate_restarts_it_in_its_pane_and_of_the_supervisor_leaves_nothing(
    work: Path, tmp_path: Path, server: str
) -> None:
    root = tmp_path / "root"
    team = Team.create("cc-team", root=root, cwd=str(work))
    supervisor = team.up(tmux_server=server)
    pane, pid = start(team)
    first = wait_for(lambda: claude_pids(team))
    os.kill(pid, signal.SIGKILL)  # the teammate: claude goes with it, and it comes back in its pane

    def restarted() -> bool:
        now = team.status().teammate("cc")
        return now is not None and now.pid not in (None, pid) and now.state in ("running", "idle")

    wait_for(restarted, timeout=30)
    wait_for(lambda: not alive(first), timeout=15)
    assert team.config().member("cc").tmux_pane_id == pane  # type: ignore[union-attr]
    wait_for(lambda: "bypass permissions" in screen(server, pane), timeout=30)
    os.kill(supervisor, signal.SIGKILL)  # the supervisor: the teammate, claude and the pane go
    wait_for(lambda: not processes_under(root), timeout=30)
    wait_for(lambda: pane not in panes(server), timeout=20)
    wait_for(lambda: team.config().member("cc").tmux_pane_id == "")  # type: ignore[union-attr]
    nothing_left_under(root)


def test_kill_9_of_the_tmux_server_takes_claude_with_it_and_brings_it_back(
    work: Path, tmp_path: Path, server: str
) -> None:
    root = tmp_path / "root"
    team = Team.create("cc-team", root=root, cwd=str(work))
    team.up(tmux_server=server)
    try:
        _, pid = start(team)
        first = wait_for(lambda: claude_pids(team))
        os.kill(int(tmux(server, "display", "-p", "#{pid}")), signal.SIGKILL)
        wait_for(lambda: not alive([pid, *first]), timeout=20)

        def back() -> bool:
            now = team.status().teammate("cc")
            return now is not None and now.pid != pid and now.state in ("running", "idle")

        wait_for(back, timeout=30)
        pane = team.config().member("cc").tmux_pane_id  # type: ignore[union-attr]
        assert pane in panes(server), "its new pane, on a new server, is the one the config names"
        wait_for(lambda: "bypass permissions" in screen(server, pane), timeout=30)
    finally:
        team.down()
    wait_for(lambda: not panes(server), timeout=30)
    nothing_left_under(root)


# Claude Code's way with the team config, alone: it reads it (with the pane id in it), and
# writes that copy back in place as it stops, as its turn-end write does when a stop lands.
FAKE_CLAUDE = """#!{python}
import os, signal, sys, time
if "--version" in sys.argv:
    print("2.1.38 (Claude Code)")
    sys.exit(0)
team = sys.argv[sys.argv.index("--team-name") + 1]
path = os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "teams", team, "config.json")
while b'"%' not in open(path, "rb").read():
    time.sleep(0.05)
copy = open(path, "rb").read()
open("copied", "w").close()

def stop(signum, frame):
    with open(path, "r+b") as f:
        f.truncate(0)
        f.write(copy)
    open("written back", "w").close()
    sys.exit(0)

signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGHUP, stop)
while True:
    time.sleep(1)
"""


def test_a_claude_teammate_whose_supervisor_died_clears_its_pane_id_once_claude_cannot_write_it_back(
    tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "claude"
    fake.write_text(FAKE_CLAUDE.format(python=sys.executable))
    fake.chmod(0o755)
    monkeypatch.setenv("AGENTTEAMS_CLAUDE_BIN", str(fake))
    root, work = tmp_path / "root", tmp_path / "work"
    work.mkdir()
    team = Team.create("cc-team", root=root, cwd=str(work))
    supervisor = team.up(tmux_server=server)
    pane, _ = start(team)
    wait_for(lambda: (work / "copied").exists(), timeout=30)
    os.kill(supervisor, signal.SIGKILL)
    wait_for(lambda: not processes_under(root), timeout=30)
    wait_for(lambda: pane not in panes(server), timeout=20)
    assert (work / "written back").exists()
    member = team.config().member("cc")
    assert member is not None and member.tmux_pane_id == "" and member.is_active is False
    nothing_left_under(root)
