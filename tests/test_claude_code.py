"""agentteams and the real Claude Code 2.1.38 (the version whose shapes our defaults follow), from the npm
registry, driven headless against the local Messages API: it writes a team that we read,
it takes what we write, and it runs as a teammate under our supervisor."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from ipc.config import TeamConfigStore
from ipc.courier import courier_path
from ipc.mailbox import Mailbox
from ipc.messaging import Messenger
from ipc.options import TeammateOptions
from ipc.paths import TeamPaths
from ipc.schemas import InboxMessage, Task, TeamConfig
from ipc.tasks import TaskList
from supervisor import Team
from supervisor.client.ps import MateTree
from tests.claude_code import CURRENT_VERSION, SEEDS_VERSION, ClaudeCode, claude_code, debug_log, environment
from tests.fake_anthropic import FakeAnthropic, Reply, text, tool_uses
from tests.runtime_helpers import cli, nothing_left_under, wait_for, whole_bytes, whole_json

LOCK_ERRORS = re.compile(
    r"already being held|ENOTDIR|Failed to write to inbox|markMessageAsReadByIndex FAILED|ELOCKED"
)


@pytest.fixture(scope="module")
def claude() -> ClaudeCode:
    return claude_code(SEEDS_VERSION)


def used_tool_ids(request: dict[str, Any]) -> set[str]:
    ids: set[str] = set()
    for message in request.get("messages", []):
        if message["role"] == "assistant" and isinstance(message["content"], list):
            ids |= {b["id"] for b in message["content"] if b.get("type") == "tool_use"}
    return ids


def last_text(request: dict[str, Any]) -> str:
    """Everything after the model's last turn (2.1.330 appends role-"system" messages too)."""
    messages = request.get("messages", [])
    since = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    return json.dumps(messages[since + 1 :])


def tools_of(request: dict[str, Any]) -> set[str]:
    return {t.get("name", "") for t in request.get("tools", [])}


class Session:
    """``claude -p`` as a team lead with one in-process teammate, ``worker``: the lead
    creates the team and a task, spawns the worker and says hi; the worker greets the lead,
    and answers each message of ours that says 'ping N' with 'pong N'."""

    LEAD = [
        ("lead-1", "TeamCreate", {"team_name": "cc-team", "description": "made by Claude Code"}),
        (
            "lead-2",
            "TaskCreate",
            {"subject": "Say hi", "description": "say hi to the lead", "activeForm": "Saying hi"},
        ),
        (
            "lead-3",
            "Task",
            {
                "description": "worker",
                "prompt": "Say hello to the lead.",
                "subagent_type": "general-purpose",
                "name": "worker",
                "team_name": "cc-team",
            },
        ),
        (
            "lead-4",
            "SendMessage",
            {"type": "message", "recipient": "worker", "content": "hi worker", "summary": "hi"},
        ),
    ]

    def __init__(self, claude: ClaudeCode, home: Path) -> None:
        self.claude, self.home = claude, home
        self.root = home / ".claude"
        self.worker_conversation = ""  # the worker's whole conversation, as last sent

    def deliveries(self, text: str) -> int:
        """How many times ``text`` was handed to the worker's model as a message."""
        return self.worker_conversation.count(f"\\n{text}\\n</teammate-message>")

    def script(self, request: dict[str, Any], n: int) -> Reply:
        tools, used, last = tools_of(request), used_tool_ids(request), last_text(request)
        if "SendMessage" not in tools:
            return text("ok")  # Claude Code's side questions (topic, title)
        if "TeamCreate" in tools:
            step = next((s for s in self.LEAD if s[0] not in used), None)
            return tool_uses(step) if step else text("The team is at work.")
        self.worker_conversation = json.dumps(request.get("messages", []))
        pings = re.findall(r"ping (\d+)", last)
        if pings and f"pong-{pings[-1]}" not in used:
            reply = {
                "type": "message",
                "recipient": "team-lead",
                "content": f"pong {pings[-1]}",
                "summary": "pong",
            }
            return tool_uses((f"pong-{pings[-1]}", "SendMessage", reply))
        if "hello-1" not in used:
            hello = {"type": "message", "recipient": "team-lead", "content": "hello lead", "summary": "hello"}
            return tool_uses(("hello-1", "SendMessage", hello))
        return text("idle")

    def start(self, api_url: str) -> subprocess.Popen[bytes]:
        env = environment(self.home, api_url)
        argv = [*self.claude.command, "-p", "Make a team.", "--dangerously-skip-permissions", "--debug"]
        log = open(self.home / "claude.out", "wb")  # noqa: SIM115 - kept open for the process
        return subprocess.Popen(
            argv,
            env=env,
            cwd=self.home,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )

    def debug_log(self) -> str:
        return debug_log(self.root)


@pytest.fixture(scope="module")
def live(claude: ClaudeCode, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    """A live Claude Code team, up for the tests of this module."""
    home = tmp_path_factory.mktemp("claude-home")
    session = Session(claude, home)
    with FakeAnthropic(session.script) as api:
        proc = session.start(api.url)
        try:
            inbox = session.root / "teams" / "cc-team" / "inboxes" / "team-lead.json"
            wait_for(lambda: inbox.exists() and "hello lead" in inbox.read_text(), timeout=90)
            yield session
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_claude_code_writes_a_team_that_agentteams_reads_field_for_field(live: Session) -> None:
    team_dir = live.root / "teams" / "cc-team"
    raw = whole_json(team_dir / "config.json")
    config = TeamConfigStore(live.root, "cc-team").read()
    assert msgspec.to_builtins(config) == raw  # every field, nothing added
    assert [m.backend_type for m in config.members] == [msgspec.UNSET, "in-process"]
    for inbox in (team_dir / "inboxes").glob("*.json"):
        data = whole_bytes(inbox)  # one read: the live claude may rewrite it between two
        entries = msgspec.json.decode(data, type=list[InboxMessage])
        assert [msgspec.to_builtins(e) for e in entries] == json.loads(data)
    for task_file in (live.root / "tasks" / "cc-team").glob("*.json"):
        data = whole_bytes(task_file)
        assert msgspec.to_builtins(msgspec.json.decode(data, type=Task)) == json.loads(data)
    # Listings hide Claude Code's per-teammate task unless asked.
    tasks = TaskList(live.root, "cc-team")
    assert [t.subject for t in tasks.list(include_internal=False)] == ["Say hi"]
    assert {t.subject for t in tasks.list()} == {"Say hi", "worker"}
    assert isinstance(config, TeamConfig) and config.lead_session_id


def test_the_cli_reads_a_live_claude_code_team(live: Session) -> None:
    assert "cc-team" in cli(live.root, "team", "list").stdout
    assert "hello lead" in cli(live.root, "inbox", "cc-team", "team-lead").stdout
    listed = cli(live.root, "task", "list", "cc-team").stdout
    assert "Say hi" in listed and "worker" not in listed
    assert "worker" in cli(live.root, "task", "list", "cc-team", "--all").stdout
    shown = cli(live.root, "ps").stdout
    assert "cc-team: Claude Code team, lead not recorded" in shown and "not up" not in shown


def test_a_message_from_agentteams_reaches_a_live_claude_code_teammate_exactly_once(live: Session) -> None:
    inbox = Mailbox(live.root, "cc-team", "worker")
    lead_inbox = live.root / "teams" / "cc-team" / "inboxes" / "team-lead.json"
    Messenger(live.root, "cc-team").send_message("team-lead", "worker", "ping 1 from agentteams", "ping")
    wait_for(lambda: "pong 1" in lead_inbox.read_text(), timeout=60)
    time.sleep(2.0)  # four more polls: a message marked read is not handed over again
    assert live.deliveries("ping 1 from agentteams") == 1
    ours = [m for m in inbox.read() if m.text == "ping 1 from agentteams"]
    assert len(ours) == 1 and ours[0].read is True
    assert not (live.root / "teams" / "cc-team" / "inboxes" / "worker.json.lock").exists()
    assert not LOCK_ERRORS.findall(live.debug_log())


def test_agentteams_appends_while_claude_code_reads_and_marks(live: Session) -> None:
    """Our messages land while Claude Code rewrites the inbox to mark what it read: none is
    lost, each is handed to the model once, and Claude Code logs no lock error."""
    messenger = Messenger(live.root, "cc-team")
    for i in range(2, 12):
        messenger.send_message("team-lead", "worker", f"ping {i} from agentteams", "ping")
        time.sleep(0.15)
    lead_inbox = live.root / "teams" / "cc-team" / "inboxes" / "team-lead.json"
    wait_for(lambda: "pong 11" in lead_inbox.read_text(), timeout=90)
    time.sleep(2.0)
    texts = [m.text for m in Mailbox(live.root, "cc-team", "worker").read()]
    for i in range(2, 12):
        assert texts.count(f"ping {i} from agentteams") == 1
        assert live.deliveries(f"ping {i} from agentteams") == 1
    assert not LOCK_ERRORS.findall(live.debug_log())


# ---------------------------------------------------------------- Claude Code as our teammate


def is_claude(cmdline: str) -> bool:
    """2.1.38 renames its node process `claude`; 2.1.330 is a binary called claude."""
    return bool(cmdline) and Path(cmdline.split()[0]).name == "claude"


def teammate_script(out: Path) -> Any:
    """A Claude Code teammate 'cc': it runs its task (writes ``out``), completes it, greets
    the offline teammate 'alice', tells the lead alice's answer, and approves a shutdown.
    It speaks each version's SendMessage (2.1.38: ``{type, recipient, content}``; 2.1.330:
    ``{to, message}``, a tool it must first load with ToolSearch)."""

    def script(request: dict[str, Any], n: int) -> Reply:
        tools, used, last = tools_of(request), used_tool_ids(request), last_text(request)
        current = "ToolSearch" in tools
        if "SendMessage" not in tools and not current:
            return text("ok")  # Claude Code's side questions (topic, title)
        if current and "search" not in used:
            return tool_uses(
                ("search", "ToolSearch", {"query": "select:SendMessage,TaskUpdate", "max_results": 5})
            )

        def send(to: str, content: str) -> dict[str, Any]:
            if current:
                return {"to": to, "message": content, "summary": content}
            return {"type": "message", "recipient": to, "content": content, "summary": content}

        request_id = re.search(r"(shutdown-\d+@cc)", last)
        if request_id and "bye" not in used:
            answer: dict[str, Any] = {
                "type": "shutdown_response",
                "request_id": request_id[1],
                "approve": True,
            }
            return tool_uses(
                ("bye", "SendMessage", {"to": "team-lead", "message": answer} if current else answer)
            )
        if "[auto-reply] alice" in last and "tell" not in used:
            return tool_uses(("tell", "SendMessage", send("team-lead", "alice answered")))
        if "work" not in used:
            return tool_uses(
                ("work", "Bash", {"command": f"echo from-claude > {out}", "description": "write it"}),
                ("done", "TaskUpdate", {"taskId": "1", "status": "completed"}),
                *([("list", "ListAgents", {})] if current else []),  # 2.1.330 learns who joined since
            )
        if "greet" not in used:
            return tool_uses(("greet", "SendMessage", send("alice", "hello alice")))
        return text("idle")

    return script


@pytest.fixture(params=[SEEDS_VERSION, pytest.param(CURRENT_VERSION, marks=pytest.mark.interop)])
def teammate_claude(request: pytest.FixtureRequest) -> ClaudeCode:
    """Both versions as teammates: 2.1.38 in `make test`, the current release in `make interop`."""
    return claude_code(request.param)


@pytest.fixture
def claude_env(
    teammate_claude: ClaudeCode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeAnthropic]:
    claude = teammate_claude
    out = tmp_path / "work" / "out.txt"
    out.parent.mkdir()
    api = FakeAnthropic(teammate_script(out))
    for key, value in environment(tmp_path, api.url).items():
        if key != "PATH":
            monkeypatch.setenv(key, value)
    monkeypatch.setenv("AGENTTEAMS_CLAUDE_BIN", str(claude.executable))
    with api:
        yield api


def test_a_claude_code_teammate_works_beside_an_offline_one_and_leaves_on_request(
    claude_env: FakeAnthropic, teammate_claude: ClaudeCode, tmp_path: Path
) -> None:
    root, work = tmp_path / "root", tmp_path / "work"
    team = Team.create("mix", root=root, cwd=str(work))
    team.up()
    try:
        team.tasks.create("Write out.txt", "write it")
        team.tasks.claim("1", "team-lead")  # held for cc: the offline teammate cannot take it
        team.spawn("alice", prompt="Answer your messages.")  # first: 2.1.330 reads the roster as it starts
        reply = team.start_teammate(
            TeammateOptions(
                name="cc",
                prompt="Do task #1.",
                model="claude-code:sonnet",
                permission_mode="bypassPermissions",
            )
        )
        team.tasks.update("1", owner="cc")
        assert team.config().member("cc").backend_type == "claude-code"  # type: ignore[union-attr]

        def cc_with_claude() -> MateTree | None:  # claude starts a moment after its teammate
            cc = next(m for m in team.ps().teammates if m.name == "cc")
            return cc if any(is_claude(c.cmdline) for c in cc.children) else None

        cc = wait_for(cc_with_claude)
        # Ours carries Claude Code's flags (Claude Code renames its own process to `claude`).
        assert cc.pid == reply.pid and cc.process is not None and "--agent-id cc@mix" in cc.process.cmdline
        # 2.1.330 listens on a socket of its own and gets a courier; 2.1.38 has only its poll.
        courier = courier_path(TeamPaths(root, "mix").runtime_dir(), "cc")
        if teammate_claude.version == SEEDS_VERSION:
            assert not courier.exists()
        else:
            wait_for(courier.exists, timeout=30)
        wait_for(lambda: team.tasks.get("1").status == "completed", timeout=90)
        assert (work / "out.txt").read_text() == "from-claude\n"
        wait_for(
            lambda: any(m.text == "alice answered" for m in team.inbox("team-lead").history()), timeout=60
        )
        stopped = team.shutdown("cc", grace=30)  # Claude Code answers the request itself, and exits
        assert stopped.stopped and team.config().member("cc") is None
    finally:
        team.down()
    nothing_left_under(root)


def test_a_claude_code_teammate_dies_with_its_supervisor(claude_env: FakeAnthropic, tmp_path: Path) -> None:
    root = tmp_path / "root"
    team = Team.create("mix", root=root, cwd=str(tmp_path / "work"))
    team.up()
    team.start_teammate(
        TeammateOptions(
            name="cc", prompt="Wait.", model="claude-code:sonnet", permission_mode="bypassPermissions"
        )
    )
    wait_for(lambda: any(is_claude(c.cmdline) for m in team.ps().teammates for c in m.children))
    os.kill(team.supervisor_pid() or 0, signal.SIGKILL)
    nothing_left_under(root, timeout=15)


def test_a_claude_code_teammate_without_claude_code_is_a_clear_error_that_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTTEAMS_CLAUDE_BIN", str(tmp_path / "no-such-claude"))
    root = tmp_path / "root"
    team = Team.create("mix", root=root, cwd=str(tmp_path))
    team.up()
    try:
        before = (root / "teams" / "mix" / "config.json").read_bytes()
        done = cli(root, "spawn", "mix", "cc", "--prompt", "p", "--backend", "claude-code", ok=False)
        assert done.returncode == 1 and done.stderr.count("\n") == 1
        assert "AGENTTEAMS_CLAUDE_BIN=" in done.stderr and "is not a file" in done.stderr
        assert (root / "teams" / "mix" / "config.json").read_bytes() == before
        assert not (root / "teams" / "mix" / "inboxes" / "cc.json").exists()
        bad_model = cli(root, "spawn", "mix", "cc", "--prompt", "p", "--model", "claude-code:gpt-4", ok=False)
        assert bad_model.returncode == 1 and "runs Claude models" in bad_model.stderr
    finally:
        team.down()
