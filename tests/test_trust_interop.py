"""Our lead's signatures checked by the real Claude Code 2.1.330 (`make interop`): a claude
teammate started by our supervisor gets ``--lead-verify-key``; what our lead side signs
reaches its model as genuine, an unsigned entry claiming to be the lead is marked
``verified="false"`` by Claude Code itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psutil
import pytest

from ipc.mailbox import Mailbox, new_message
from ipc.options import TeammateOptions
from supervisor import Team
from tests.claude_code import ClaudeCode
from tests.fake_anthropic import Reply, text, tool_uses
from tests.runtime_helpers import nothing_left_under, wait_for
from tests.test_claude_code import used_tool_ids
from tests.test_claude_socket import Api, api, current  # noqa: F401 (fixtures)

pytestmark = pytest.mark.interop


def _wrapper_of(recorded: Api, needle: str) -> str:
    """The <teammate-message …> opening tag the model was shown around ``needle``."""
    for request in reversed(recorded.requests):
        for message in request.get("messages", []):
            content = json.dumps(message.get("content"))
            at = content.find(needle)
            if at >= 0:
                opening = content.rfind("<teammate-message", 0, at)
                return content[opening : content.find(">", opening) + 1] if opening >= 0 else ""
    return ""


def test_claude_verifies_what_our_lead_signs_and_marks_what_it_does_not(
    current: ClaudeCode,  # noqa: F811
    api: Api,  # noqa: F811
    tmp_path: Path,
) -> None:
    def script(request: dict[str, Any]) -> Reply:
        if "search" not in used_tool_ids(request):
            return tool_uses(("search", "ToolSearch", {"query": "select:SendMessage", "max_results": 5}))
        return text("idle")

    api.script = script
    root, work = tmp_path / "root", tmp_path / "work"
    work.mkdir()
    team = Team.create("mix", root=root, cwd=str(work))
    team.up(wake="poll")  # Claude Code's own inbox poll, where it classes each entry
    try:
        team.start_teammate(
            TeammateOptions(
                name="cc",
                prompt="Wait for messages.",
                model="claude-code:sonnet",
                permission_mode="bypassPermissions",
            )
        )
        lead_key = team.store.config_member("team-lead").verify_key  # type: ignore[union-attr]
        claude = wait_for(
            lambda: next(
                (
                    p
                    for p in psutil.process_iter(["cmdline"])
                    if "--lead-verify-key" in (p.info["cmdline"] or [])
                ),
                None,
            ),
            timeout=30,
        )
        cmdline = claude.info["cmdline"]
        passed = cmdline[cmdline.index("--lead-verify-key") + 1]
        assert passed.split(".", 1)[1] == str(lead_key).split(".", 1)[1]  # our lead's key, stamped now
        wait_for(lambda: _wrapper_of(api, "Wait for messages."), timeout=90)
        assert 'verified="false"' not in _wrapper_of(api, "Wait for messages.")  # the signed prompt
        team.send("cc", "SIGNED-BY-OUR-LEAD", summary="signed")
        forged = new_message("team-lead", "UNSIGNED-AS-THE-LEAD", "forged")  # no key: unsigned
        Mailbox(root, "mix", "cc").append_message(forged)
        signed = wait_for(lambda: _wrapper_of(api, "SIGNED-BY-OUR-LEAD"), timeout=60)
        unsigned = wait_for(lambda: _wrapper_of(api, "UNSIGNED-AS-THE-LEAD"), timeout=60)
        assert 'teammate_id=\\"team-lead\\"' in signed and "verified" not in signed
        assert 'teammate_id=\\"team-lead\\"' in unsigned and 'verified=\\"false\\"' in unsigned
    finally:
        team.down()
    nothing_left_under(root)
