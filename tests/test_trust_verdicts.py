"""Every door gives one verdict for one entry: the command line's `inbox`, the API's and the
web's look at the team's messages, the events stream and MCP's read_inbox. In a team whose
lead is Claude Code's (its config names no key for the lead), the lead's entries are checked
with the key its live `claude` teammates were given; the command line alone did that, so
the same signed entry was "verified" there and "unverified" at the other doors, and an
unsigned one in the lead's name was "FORGED" there and "unverified" elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import msgspec
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from mcp_types import TextContent

from ipc import TeamConfigStore, trust
from ipc import operations as io
from ipc.mailbox import Mailbox, new_message
from ipc.paths import TeamPaths
from ipc.schemas import LEAD_NAME, LeadProcess, ShutdownRequest, body_text
from supervisor.client import operations as ops
from supervisor.client.handle import TeamHandle
from supervisor.mcp.tools import Door
from supervisor.web.events import Hub
from tests.runtime_helpers import cli


@pytest.fixture
def claude_teammate(root: Path) -> Iterator[Ed25519PrivateKey]:
    """A team made as Claude Code 2.1.330 makes it, with a live process standing for its
    `claude` teammate: the lead's public key on its command line, as Claude Code passes it."""
    store = TeamConfigStore(root, "cc")
    store.create(cwd=str(root))
    store._mutate(lambda c: setattr(c, "lead_process", LeadProcess(pid=1)))
    store._mutate(lambda c: setattr(c.members[0], "verify_key", msgspec.UNSET))
    store.add_member("worker")
    lead = trust.new_key()
    argv = ["--agent-id", "worker@cc", "--lead-verify-key", trust.public_text(lead)]
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", *argv],
        env={**os.environ, "CLAUDE_CONFIG_DIR": str(root)},
    )
    try:
        yield lead
    finally:
        process.kill()
        process.wait()


def test_every_door_checks_a_claude_code_leads_entries_with_its_teammates_key(
    root: Path, claude_teammate: Ed25519PrivateKey
) -> None:
    box = Mailbox(root, "cc", "worker")
    box.append_message(trust.sign(new_message(LEAD_NAME, "signed by the lead", "a"), claude_teammate))
    box.append_message(new_message(LEAD_NAME, "not signed", "b"))
    for_another = ShutdownRequest(request_id="shutdown-1@other", from_=LEAD_NAME, reason="r", timestamp="t")
    box.append_message(trust.sign(new_message(LEAD_NAME, body_text(for_another), "c"), claude_teammate))
    expected = ["verified", "forged", "forged"]

    shown = cli(root, "inbox", "cc", "worker").stdout.splitlines()
    assert [
        "(verified)" in shown[0],
        "(FORGED: unsigned" in shown[1],
        "(FORGED: a ShutdownRequest that is for other" in shown[2],
    ] == [True] * 3, shown

    team = TeamHandle("cc", root=root)
    looked = ops.team_messages(team, io.MessageQuery()).messages
    assert [m.event.trust for m in looked] == expected

    hub = Hub(TeamPaths(root, "cc"))
    streamed, _ = hub._new_messages("worker")
    assert [m.event.trust for m in streamed] == expected

    read = anyio.run(Door(team).call, "read_inbox", {"name": "worker"})
    assert isinstance(block := read.content[0], TextContent)
    entries = block.text.split("\n\nFrom ")
    assert ["[" not in entries[0].splitlines()[0], "[forged]" in entries[1], "[forged]" in entries[2]] == [
        True
    ] * 3
    assert all(not m.read for m in box.read()) and not trust.read_refusals(team.paths)  # looks, all of them


def test_a_replayed_entry_is_forged_at_every_door(root: Path, claude_teammate: Ed25519PrivateKey) -> None:
    entry = trust.sign(new_message(LEAD_NAME, "once", "a"), claude_teammate)
    box = Mailbox(root, "cc", "worker")
    box.append_message(entry)
    box.append_message(entry)  # the same msg_id again
    looked = ops.team_messages(TeamHandle("cc", root=root), io.MessageQuery()).messages
    assert [m.event.trust for m in looked] == ["verified", "forged"]
    shown = cli(root, "inbox", "cc", "worker").stdout
    assert "was delivered before (a replay)" in shown
