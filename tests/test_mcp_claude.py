"""The real Claude Code 2.1.38 in a team through the MCP door: started headless with
``--mcp-config`` pointing at ``agentteams mcp TEAM --as NAME`` (the entry ``--print-config
claude`` prints), against the local Messages API scripted to call ``send_message`` and
``task_claim``. The message reaches an offline teammate, which answers; the task is claimed
by NAME; when claude exits, its member is inactive and its task free again."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ipc.options import TeammateOptions
from ipc.tasks import TaskList
from supervisor import Team
from tests.claude_code import SEEDS_VERSION, ClaudeCode, claude_code, environment
from tests.fake_anthropic import FakeAnthropic, Reply, text, tool_uses
from tests.mcp_client import stdio_params
from tests.runtime_helpers import cli, nothing_left_under, running_team, wait_for
from tests.test_claude_code import tools_of, used_tool_ids


@pytest.fixture(scope="module")
def claude() -> ClaudeCode:
    return claude_code(SEEDS_VERSION)


def test_claude_code_joins_through_mcp_sends_a_message_and_claims_a_task(
    tmp_path: Path, claude: ClaudeCode
) -> None:
    root, home = tmp_path / "state", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    with running_team(root, fallback_poll=600.0) as team:
        team.spawn("bob", prompt="Answer messages.")
        wait_for(lambda: (m := team.status().teammate("bob")) is not None and m.state == "idle", timeout=30)
        task = TaskList(root, "t").create("claimed by claude")  # nothing rings: bob is not woken for it
        config = cli(root, "mcp", "t", "--as", "claude", "--print-config", "claude").stdout
        server = next(iter(json.loads(config)["mcpServers"]))
        (home / "mcp.json").write_text(config)
        tool = f"mcp__{server}__"
        # The claim first: bob, woken by the message, would take a free task itself.
        steps = [
            ("use-1", tool + "task_claim", {"id": task.id}),
            (
                "use-2",
                tool + "send_message",
                {"to": "bob", "text": "hello bob, from claude", "summary": "hello"},
            ),
        ]
        seen: dict[str, Any] = {}

        def script(request: dict[str, Any], n: int) -> Reply:
            if tool + "send_message" not in tools_of(request):
                return text("ok")  # Claude Code's side questions (topic, title)
            used = used_tool_ids(request)
            if "use-1" in used and "owner" not in seen:
                seen["owner"] = team.tasks.get(task.id).owner  # while claude's member still runs
                seen["results"] = json.dumps(request["messages"][-1]["content"])
            step = next((s for s in steps if s[0] not in used), None)
            return tool_uses(step) if step else text("Done: bob has my message and the task is mine.")

        with FakeAnthropic(script) as api:
            done = subprocess.run(
                [
                    *claude.command,
                    "-p",
                    "Join the team and take a task.",
                    "--mcp-config",
                    str(home / "mcp.json"),
                ]
                + ["--strict-mcp-config", "--dangerously-skip-permissions"],
                env=environment(home, api.url),
                cwd=home,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=180,
            )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Done: bob has my message" in done.stdout
        # The message reached the offline teammate (it was handed over: bob answered it).
        bob = [m for m in team.inbox("bob").read() if m.from_ == "claude"]
        assert [m.text for m in bob] == ["hello bob, from claude"]
        wait_for(lambda: any("received your message" in m.text for m in team.inbox("claude").read()))
        # The task was claude's while it ran, through the tool's result too.
        assert seen["owner"] == "claude"
        assert '\\"owner\\":\\"claude\\"' in seen["results"] or '"owner":"claude"' in seen["results"]
        # claude exited: its server saw its stdin close and left the team's work free.
        member = team.member("claude")
        assert member is not None and member.backend_type == "mcp" and member.is_active is False
        assert team.tasks.get(task.id).owner != "claude"


@pytest.mark.heavy  # one of the slowest tests (7-17 s): make test-heavy, which CI runs too
def test_a_claude_code_teammate_reads_an_mcp_members_message_and_its_answer_wakes_the_member(
    tmp_path: Path, claude: ClaudeCode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP member's message goes through the same locks and shapes: a Claude Code 2.1.38
    teammate reads it. Claude Code rings no doorbell, so only the member's watch on its inbox
    file can wake its wait (the fallback poll is far beyond the deadline)."""
    root, work = tmp_path / "root", tmp_path / "work"
    work.mkdir()

    def script(request: dict[str, Any], n: int) -> Reply:
        if "SendMessage" not in tools_of(request):
            return text("ok")
        if "hello cc, from mcp" in json.dumps(request.get("messages", [])) and "answer" not in used_tool_ids(
            request
        ):
            answer = {"type": "message", "recipient": "alice", "content": "hello alice, from claude"}
            return tool_uses(("answer", "SendMessage", {**answer, "summary": "hi"}))
        return text("idle")

    with FakeAnthropic(script) as api:
        for key, value in environment(tmp_path, api.url).items():
            if key != "PATH":
                monkeypatch.setenv(key, value)
        monkeypatch.setenv("AGENTTEAMS_CLAUDE_BIN", str(claude.executable))
        team = Team.create("mix", root=root, cwd=str(work))
        team.up(fallback_poll=600.0)
        try:

            async def session() -> list[dict[str, Any]]:
                params = stdio_params(str(root), "mix", "alice", "--fallback-poll", "600")
                async with Client(params) as alice:
                    options = TeammateOptions(
                        name="cc",
                        prompt="Answer messages.",
                        model="claude-code:sonnet",
                        permission_mode="bypassPermissions",
                    )
                    await anyio.to_thread.run_sync(team.start_teammate, options)
                    sent = await alice.call_tool(
                        "send_message", {"to": "cc", "text": "hello cc, from mcp", "summary": "hello"}
                    )
                    assert not sent.is_error, sent.content
                    got = await alice.call_tool("wait_for_messages", {"timeout_s": 150})
                    events: list[dict[str, Any]] = got.structured_content["events"]
                    return events

            events = anyio.run(session)
            assert [(e["from"], e["text"]) for e in events] == [("cc", "hello alice, from claude")]
            ours = [m for m in team.inbox("cc").read() if m.from_ == "alice"]
            assert len(ours) == 1 and ours[0].read is True  # Claude Code took it, and marked it
        finally:
            team.down()
    nothing_left_under(root)
