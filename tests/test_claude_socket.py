"""agentteams and Claude Code 2.1.330's own messaging socket, with the real binary (`make
interop`): a claude teammate woken through its socket, each message delivered once; a plain
`claude` session in a terminal listing and messaging our agents and answered by them;
wrong tokens refused by our listeners (Claude Code takes them, on Linux); nothing written
into the user's own ~/.claude."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipc import cc_registry, cc_socket
from ipc.courier import courier_path
from ipc.mailbox import Mailbox, new_message
from ipc.options import TeammateOptions
from ipc.paths import TeamPaths
from ipc.wake import socket_path
from supervisor import Team
from tests.claude_code import CURRENT_VERSION, ClaudeCode, claude_code, environment
from tests.fake_anthropic import FakeAnthropic, Reply, text, tool_uses
from tests.runtime_helpers import cli, nothing_left_under, wait_for
from tests.test_claude_code import last_text, tools_of, used_tool_ids

pytestmark = pytest.mark.interop
KEY = "sk-ant-test-0123456789abcdefghijklmnop"
USERS_CLAUDE = Path.home() / ".claude"  # the real one, before any test changes HOME


def our_files_in(config_dir: Path, pids: set[int]) -> list[str]:
    folder = config_dir / "sessions"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.name.split(".", 1)[0] in {str(pid) for pid in pids})


class Api:
    """The fake Messages API, keeping every request, with a script per test."""

    def __init__(self) -> None:
        self.url = ""
        self.requests: list[dict[str, Any]] = []
        self.script: Any = lambda request: text("ok")

    def __call__(self, request: dict[str, Any], n: int) -> Reply:
        self.requests.append(request)
        if "ToolSearch" not in tools_of(request):
            return text("ok")  # side questions
        reply: Reply = self.script(request)
        return reply

    def turn(self) -> str:
        """The conversation as the model's latest turn saw it (side questions left out)."""
        turns = [r for r in self.requests if "ToolSearch" in tools_of(r)]
        return json.dumps(turns[-1]["messages"]) if turns else ""

    def seen(self, needle: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if needle in json.dumps(r.get("messages", []))]


@pytest.fixture
def api() -> Iterator[Api]:
    recorder = Api()
    with FakeAnthropic(recorder) as server:
        recorder.url = server.url
        yield recorder


@pytest.fixture
def current(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, api: Api) -> ClaudeCode:
    claude = claude_code(CURRENT_VERSION)
    for key, value in environment(tmp_path, api.url, ANTHROPIC_API_KEY=KEY).items():
        if key != "PATH":
            monkeypatch.setenv(key, value)
    monkeypatch.setenv("AGENTTEAMS_CLAUDE_BIN", str(claude.executable))
    return claude


# ---------------------------------------------------------------- a claude teammate, woken


def test_a_claude_teammate_is_woken_through_its_socket_and_gets_each_message_once(
    current: ClaudeCode, api: Api, tmp_path: Path
) -> None:
    """Each 'ping N' reaches the teammate's model through its socket (Claude Code's
    cross-session wrapper, not a polled <teammate-message>), once, and is answered."""

    def script(request: dict[str, Any]) -> Reply:
        used, last = used_tool_ids(request), last_text(request)
        if "search" not in used:
            return tool_uses(("search", "ToolSearch", {"query": "select:SendMessage", "max_results": 5}))
        request_id = re.search(r"(shutdown-\d+@cc)", last)
        if request_id and "bye" not in used:
            answer = {"type": "shutdown_response", "request_id": request_id[1], "approve": True}
            return tool_uses(("bye", "SendMessage", {"to": "team-lead", "message": answer}))
        # Odd pings are answered at the address they came from (the courier passes the answer
        # on), even ones through the team's inbox.
        sender = re.search(r'from=\\"(uds:[^\\]+)\\" from-name=\\"team-lead\\"', last)
        pongs = [
            (
                f"pong-{n}",
                "SendMessage",
                {
                    "to": sender[1] if sender and int(n) % 2 else "team-lead",
                    "message": f"pong {n}",
                    "summary": "pong",
                },
            )
            for n in re.findall(r"ping (\d+) from agentteams", last)
            if f"pong-{n}" not in used
        ]
        return tool_uses(*pongs) if pongs else text("idle")

    api.script = script
    root, work = tmp_path / "root", tmp_path / "work"
    work.mkdir()
    team = Team.create("mix", root=root, cwd=str(work))
    ours = {os.getpid()}
    team.up()
    try:
        team.start_teammate(
            TeammateOptions(
                name="cc",
                prompt="Answer pings.",
                model="claude-code:sonnet",
                permission_mode="bypassPermissions",
            )
        )
        wait_for(lambda: courier_path(TeamPaths(root, "mix").runtime_dir(), "cc").exists(), timeout=30)
        wait_for(lambda: api.seen("Answer pings."), timeout=60)
        for n in range(1, 11):
            team.send("cc", f"ping {n} from agentteams", summary="ping")
            time.sleep(0.05)
        lead = Mailbox(root, "mix", "team-lead")
        wait_for(
            lambda: all(any(m.text == f"pong {n}" for m in lead.read()) for n in range(1, 11)), timeout=90
        )
        time.sleep(2.5)  # two more polls: nothing is delivered again
        conversation = api.turn()
        for n in range(1, 11):
            assert conversation.count(f"\\nping {n} from agentteams\\n</cross-session-message>") == 1
            assert f"ping {n} from agentteams\\n</teammate-message>" not in conversation  # not by the poll
            (pong,) = [m for m in lead.read() if m.text == f"pong {n}"]
            # by its reply address, passed on by the courier (the summary is the first line)
            assert pong.from_ == "cc" and pong.summary == (f"pong {n}" if n % 2 else "pong")
        assert 'from-name=\\"team-lead\\"' in conversation
        # The record: each ping's entry is there read, or already pruned by Claude Code.
        assert not [m for m in Mailbox(root, "mix", "cc").read() if "ping" in m.text and not m.read]
        # Why the courier: the same message appended unread and sent through the socket, with
        # one msg_id, reaches the model twice (Claude Code does not match them).
        claude_socket = socket_path(TeamPaths(root, "mix").runtime_dir(), "cc", "m")
        twice = new_message("team-lead", "TWICE by both paths", "t", v2=True)
        Mailbox(root, "mix", "cc").append_message(twice)
        both = cc_socket.user_frame(twice.text, mode="bypass", msg_id=str(twice.msg_id))
        cc_socket.send(str(claude_socket), both, token=cc_registry.token_for(root.resolve(), claude_socket))
        wait_for(
            lambda: api.turn().count("\\nTWICE by both paths\\n") == 2,
            timeout=30,
        )
        # Claude Code does not refuse a wrong token, even on a socket given by --messaging-socket-path.
        wrong = cc_socket.user_frame("WRONG-TOKEN to the teammate", mode="bypass")
        cc_socket.send(str(claude_socket), wrong, token="0" * 32)
        wait_for(lambda: api.seen("WRONG-TOKEN to the teammate"), timeout=30)
        cc = next(m for m in team.ps().teammates if m.name == "cc")
        ours = {os.getpid(), team.supervisor_pid() or 0, cc.pid or 0, *(c.pid for c in cc.children)}
        stopped = team.shutdown("cc", grace=30)  # protocol messages still go by the inbox
        assert stopped.stopped
    finally:
        team.down()
    nothing_left_under(root)
    assert not our_files_in(USERS_CLAUDE, ours)


# ---------------------------------------------------------------- a plain claude beside a team


class Terminal:
    """A plain interactive `claude` (2.1.330) in tmux, with its own HOME and config dir."""

    def __init__(self, claude: ClaudeCode, home: Path, api_url: str, runtime: str) -> None:
        self.home, self.config = home, home / ".claude"
        self.work = home / "work"
        self.work.mkdir(parents=True)
        self.config.mkdir()
        (home / ".claude.json").write_text(
            json.dumps(
                {
                    "hasCompletedOnboarding": True,
                    "theme": "dark",
                    "bypassPermissionsModeAccepted": True,
                    "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
                    "projects": {
                        str(self.work): {
                            "hasTrustDialogAccepted": True,
                            "hasCompletedProjectOnboarding": True,
                        }
                    },
                }
            )
        )
        self.tmux = f"agentteams-plain-{home.parent.name}"[:60]
        # The same runtime directory as the team, as in one login session: sockets in one place.
        env = environment(home, api_url, ANTHROPIC_API_KEY=KEY, XDG_RUNTIME_DIR=runtime)
        command = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        command += f" {shlex.quote(str(claude.executable))} --dangerously-skip-permissions --debug"
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
                str(self.work),
                f"env -i {command}",
            ],
            check=True,
        )

    def record(self) -> dict[str, Any]:
        """Its own session record (the one without our pids)."""
        for path in (self.config / "sessions").glob("*.json"):
            data = json.loads(path.read_text())
            if data.get("version") != "agentteams":
                return dict(data)
        return {}

    def screen(self) -> str:
        shown = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.tmux], capture_output=True, text=True
        )
        return shown.stdout

    def type(self, line: str) -> None:
        """Once its prompt is up (keys typed before are lost)."""
        wait_for(lambda: "bypass permissions on" in self.screen(), timeout=60)
        time.sleep(0.5)
        subprocess.run(["tmux", "send-keys", "-t", self.tmux, line, "Enter"], check=True)

    def stop(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.tmux], check=False, capture_output=True)


def test_a_plain_claude_session_lists_our_agents_messages_them_and_is_answered(
    current: ClaudeCode, api: Api, tmp_path: Path
) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("NOT TESTED: tmux is needed to run Claude Code interactively")
    steps: list[tuple[str, str, dict[str, Any]]] = [
        ("search", "ToolSearch", {"query": "select:ListAgents,SendMessage", "max_results": 5}),
        ("list", "ListAgents", {}),
        (
            "to-alice",
            "SendMessage",
            {"to": "alice.mix", "message": "HELLO from a plain claude", "summary": "hi"},
        ),
        (
            "to-lead",
            "SendMessage",
            {"to": "team-lead.mix", "message": "QUESTION for the lead", "summary": "q"},
        ),
    ]

    def script(request: dict[str, Any]) -> Reply:
        used = used_tool_ids(request)
        step = next((s for s in steps if s[0] not in used), None)
        return tool_uses(step) if step else text("waiting")

    api.script = script
    root, work = tmp_path / "root", tmp_path / "work"
    work.mkdir()
    home = tmp_path / "person"
    team = Team.create("mix", root=root, cwd=str(work))
    terminal = Terminal(current, home, api.url, os.environ["XDG_RUNTIME_DIR"])
    ours: set[int] = set()
    try:
        team.up(claude_peers=str(terminal.config), lead_permission_mode="bypassPermissions")
        alice = team.start_teammate(
            TeammateOptions(name="alice", prompt="Answer messages.", permission_mode="bypassPermissions")
        )
        ours = {team.supervisor_pid() or 0, alice.pid or 0}
        wait_for(lambda: len(our_files_in(terminal.config, ours)) == 4, timeout=30)  # 2 records, 2 keys
        wait_for(terminal.record, timeout=30)

        terminal.type("Talk to the team next door.")
        listed = wait_for(lambda: api.seen("Peer sessions"), timeout=60)
        listing = json.dumps(listed[0]["messages"])
        assert "alice.mix" in listing and "team-lead.mix" in listing

        # alice (an offline teammate) answers from her own process, to the session's address.
        wait_for(lambda: api.seen("alice received your message: HELLO from a plain claude"), timeout=60)
        answer = json.dumps(api.seen("alice received your message")[-1]["messages"])
        assert 'from-name=\\"alice.mix\\"' in answer
        session_address = cc_socket.address(terminal.record()["messagingSocketPath"])
        alice_inbox = Mailbox(root, "mix", "alice").read()
        assert [(m.from_, m.text) for m in alice_inbox if "HELLO" in m.text] == [
            (session_address, "HELLO from a plain claude")
        ]

        # The lead's side: the question waits in the lead's inbox; a person answers it.
        question = wait_for(
            lambda: [
                m for m in Mailbox(root, "mix", "team-lead").read() if m.text == "QUESTION for the lead"
            ],
            timeout=30,
        )
        assert question[0].from_ == session_address and not question[0].read
        cli(root, "send", "mix", session_address, "ANSWER from the lead", "--summary", "answer")
        wait_for(lambda: api.seen("ANSWER from the lead"), timeout=30)
        delivered = json.dumps(api.seen("ANSWER from the lead")[-1]["messages"])
        assert delivered.count("\\nANSWER from the lead\\n</cross-session-message>") == 1

        # A wrong token is refused by our listener; Claude Code's own socket takes it (Linux).
        alice_record = json.loads((terminal.config / "sessions" / f"{alice.pid}.json").read_text())
        alice_socket = alice_record["messagingSocketPath"]
        forged = cc_socket.user_frame("FORGED for alice", sender=session_address)
        cc_socket.send(alice_socket, forged, token="0" * 32)
        cc_socket.send(
            terminal.record()["messagingSocketPath"],
            cc_socket.user_frame("WRONG-TOKEN to claude", mode="bypass"),  # its class: not held
            token="0" * 32,
        )
        wait_for(lambda: api.seen("WRONG-TOKEN to claude"), timeout=30)
        time.sleep(1.0)
        assert not [m for m in Mailbox(root, "mix", "alice").read() if "FORGED" in m.text]
        right = cc_registry.token_for(terminal.config, alice_socket)
        assert right is not None
    finally:
        terminal.stop()
        team.down()
    nothing_left_under(root)
    assert our_files_in(terminal.config, ours) == []  # withdrawn when the team went down
    assert not our_files_in(USERS_CLAUDE, ours | {os.getpid()})
