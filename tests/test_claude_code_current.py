"""agentteams and the current Claude Code release (2.1.330; `make interop`): its session team,
made as it runs interactively in a real terminal (tmux), read field for field; our messages
to its in-process teammate delivered once, while both sides write; our entries in its shape."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ipc.config import TeamConfigStore
from ipc.messaging import Messenger
from tests.claude_code import CURRENT_VERSION, claude_code, debug_log, environment
from tests.fake_anthropic import FakeAnthropic, Reply, text, tool_uses
from tests.runtime_helpers import cli, wait_for
from tests.test_claude_code import LOCK_ERRORS, last_text, tools_of, used_tool_ids

pytestmark = pytest.mark.interop
KEY = "sk-ant-test-0123456789abcdefghijklmnop"


class Session:
    """An interactive 2.1.330 lead in tmux, told to make a team: it spawns one in-process
    teammate, ``worker``, that greets the lead and answers each 'ping N' with 'pong N'."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.root = home / ".claude"
        self.conversations: dict[str, str] = {"lead": "", "worker": ""}
        self.tmux = f"agentteams-interop-{home.name}"

    def script(self, request: dict[str, Any], n: int) -> Reply:
        tools, used, last = tools_of(request), used_tool_ids(request), last_text(request)
        messages = request.get("messages", [])
        first = json.dumps(messages[0]) if messages else ""
        if "ToolSearch" not in tools:
            return text("ok")  # side questions
        who = "worker" if "Say hello to the lead." in first else "lead"
        self.conversations[who] = json.dumps(messages)
        if who == "lead":
            if "spawn" not in used:
                return tool_uses(
                    (
                        "spawn",
                        "Agent",
                        {"description": "worker", "prompt": "Say hello to the lead.", "name": "worker"},
                    )
                )
            return text("The team is at work.")
        if "search" not in used:
            return tool_uses(("search", "ToolSearch", {"query": "select:SendMessage", "max_results": 5}))
        if "hello" not in used:
            return tool_uses(
                ("hello", "SendMessage", {"to": "team-lead", "message": "hello lead", "summary": "hello"})
            )
        pongs = [
            (f"pong-{p}", "SendMessage", {"to": "team-lead", "message": f"pong {p}", "summary": "pong"})
            for p in re.findall(r"ping (\d+) from agentteams", last)
            if f"pong-{p}" not in used
        ]
        return tool_uses(*pongs) if pongs else text("idle")

    def start(self, executable: Path, api_url: str) -> None:
        work = self.home / "work"
        work.mkdir()
        (self.home / ".claude.json").write_text(
            json.dumps(
                {  # its first-run questions, answered
                    "hasCompletedOnboarding": True,
                    "theme": "dark",
                    "bypassPermissionsModeAccepted": True,
                    "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
                    "projects": {
                        str(work): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
                    },
                }
            )
        )
        env = environment(self.home, api_url, ANTHROPIC_API_KEY=KEY)
        command = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        command += f" {shlex.quote(str(executable))} --dangerously-skip-permissions --debug"
        subprocess.run(
            [
                "tmux",
                "new-session",
                "-d",
                "-s",
                self.tmux,
                "-x",
                "200",
                "-y",
                "50",
                "-c",
                str(work),
                f"env -i {command}",
            ],
            check=True,
        )
        time.sleep(3)
        subprocess.run(["tmux", "send-keys", "-t", self.tmux, "Make a team", "Enter"], check=True)

    def stop(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.tmux], check=False, capture_output=True)

    def team(self) -> str:
        return next(p.name for p in (self.root / "teams").iterdir())

    def deliveries(self, who: str, text: str) -> int:
        return self.conversations[who].count(f"\\n{text}\\n</teammate-message>")

    def debug_log(self) -> str:
        return debug_log(self.root)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    if shutil.which("tmux") is None:
        pytest.skip("NOT TESTED: tmux is needed to run Claude Code interactively")
    claude = claude_code(CURRENT_VERSION)
    session = Session(tmp_path_factory.mktemp("cc-current"))
    with FakeAnthropic(session.script) as api:
        session.start(claude.executable, api.url)
        try:
            wait_for(
                lambda: (session.root / "teams").is_dir() and "hello lead" in session.conversations["lead"],
                timeout=90,
            )
            yield session
        finally:
            session.stop()


def test_its_session_team_is_read_field_for_field(live: Session) -> None:
    path = live.root / "teams" / live.team() / "config.json"
    raw = json.loads(path.read_text())
    config = TeamConfigStore(live.root, live.team()).read()
    assert msgspec.to_builtins(config) == raw
    assert config.writes_v2 and "model" not in raw["members"][0]  # leadProcess; a lead without a model

    assert live.team() in cli(live.root, "team", "list").stdout
    cli(live.root, "inbox", live.team(), "team-lead")
    cli(live.root, "task", "list", live.team())
    shown = cli(live.root, "ps").stdout
    assert f"{live.team()}: Claude Code team, live, lead pid {raw['leadProcess']['pid']}" in shown


def test_our_messages_reach_its_teammate_once_while_both_sides_write(live: Session) -> None:
    messenger = Messenger(live.root, live.team())
    for i in range(1, 16):
        messenger.send_message("team-lead", "worker", f"ping {i} from agentteams", "ping")
        time.sleep(0.03)
    wait_for(lambda: all(f"pong {i}" in live.conversations["lead"] for i in range(1, 16)), timeout=90)
    time.sleep(2.0)
    for i in range(1, 16):
        assert live.deliveries("worker", f"ping {i} from agentteams") == 1
        assert live.deliveries("lead", f"pong {i}") == 1
    assert not LOCK_ERRORS.findall(live.debug_log())
