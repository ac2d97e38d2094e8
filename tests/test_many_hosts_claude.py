"""A real ``claude`` 2.1.38 teammate on host B, which knows only files, exchanging messages
with an offline teammate on host A, which knows only the engine: B's mirror carries them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ipc.engine import team as engine_team
from ipc.mailbox import Mailbox
from ipc.options import TeammateOptions
from tests.claude_code import SEEDS_VERSION, claude_code, environment
from tests.engine_helpers import Engine, running_engine, two_hosts
from tests.fake_anthropic import FakeAnthropic, Reply, text, tool_uses
from tests.runtime_helpers import wait_for, whole_json
from tests.test_claude_code import last_text, tools_of, used_tool_ids


def script(request: dict[str, Any], n: int) -> Reply:
    """cc greets alice (on the other host), tells the lead her answer, approves a shutdown."""
    tools, used, last = tools_of(request), used_tool_ids(request), last_text(request)
    if "SendMessage" not in tools:
        return text("ok")

    def send(to: str, content: str) -> dict[str, Any]:
        return {"type": "message", "recipient": to, "content": content, "summary": content[:30]}

    request_id = re.search(r"(shutdown-\d+@cc)", last)
    if request_id and "bye" not in used:
        answer = {"type": "shutdown_response", "request_id": request_id[1], "approve": True}
        return tool_uses(("bye", "SendMessage", answer))
    if "[auto-reply] alice" in last and "tell" not in used:
        return tool_uses(("tell", "SendMessage", send("team-lead", "alice answered across hosts")))
    if "greet" not in used:
        return tool_uses(("greet", "SendMessage", send("alice", "hello alice from claude on host b")))
    return text("idle")


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    claude = claude_code(SEEDS_VERSION)
    api = FakeAnthropic(script)
    for key, value in environment(tmp_path, api.url).items():
        if key != "PATH":
            monkeypatch.setenv(key, value)
    monkeypatch.setenv("AGENTTEAMS_CLAUDE_BIN", str(claude.executable))
    with api, running_engine(tmp_path / "engine") as found:
        yield found
        engine_team.close_all()


@pytest.mark.heavy  # one of the slowest tests (7-17 s): make test-heavy, which CI runs too
def test_a_claude_teammate_on_host_b_talks_to_an_offline_one_on_host_a(
    tmp_path: Path, engine: Engine
) -> None:
    with two_hosts(tmp_path, engine, fallback_poll=120.0) as (a, b):
        a.spawn("alice", prompt="Answer your messages.")
        b.start_teammate(
            TeammateOptions(
                name="cc",
                prompt="Greet alice.",
                model="claude-code:sonnet",
                permission_mode="bypassPermissions",
                host="hb",
            )
        )
        # Host B's files hold the team as Claude Code lays it out.
        config = whole_json(b.paths.config)
        assert {m["name"] for m in config["members"]} == {"team-lead", "alice", "cc"}
        wait_for(
            lambda: any(m.text == "alice answered across hosts" for m in a.inbox("team-lead").read()), 90
        )
        greetings = [m for m in a.inbox("alice").read() if m.text == "hello alice from claude on host b"]
        assert len(greetings) == 1 and greetings[0].from_ == "cc" and greetings[0].read
        # The reply reached cc through its file on host B, once, and cc read it there.
        in_file = [m for m in Mailbox(b.root, b.name, "cc").read() if "[auto-reply] alice" in m.text]
        assert len(in_file) == 1
        wait_for(lambda: all(m.read for m in b.inbox("cc").read()), 20)  # read there → read in the engine
        assert b.shutdown("cc", grace=30).stopped
