"""The entry an MCP client's configuration needs to start ``agentteams mcp`` over stdio:
Claude Code's ``mcpServers`` JSON (``--mcp-config`` or ``.mcp.json``), Codex's
``config.toml`` table, or the bare command as JSON."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from ipc.errors import InvalidInput
from ipc.paths import resolve_root

FORMATS = ("claude", "codex", "json")
TOOL_TIMEOUT = 3600  # seconds: wait_for_messages may wait long; Codex's default cuts at 60


def command(team: str, member: str | None, root: str | None) -> list[str]:
    """The command line that serves ``team`` (as ``member``) over stdio, with absolute paths
    (a client starts it from wherever it runs)."""
    exe = shutil.which("agentteams")
    here = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    program = [str(here)] if here is not None and here.name == "agentteams" else None
    argv = program or ([exe] if exe else [sys.executable, "-m", "supervisor.cli"])
    argv += ["mcp", team]
    if member:
        argv += ["--as", member]
    return [*argv, "--root", str(resolve_root(root))]


def server_name(team: str) -> str:
    """A name clients accept in tool names (``mcp__{name}__send_message``)."""
    return "agentteams-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in team)


def render(fmt: str, team: str, member: str | None, root: str | None) -> str:
    if fmt not in FORMATS:
        raise InvalidInput(f"--print-config takes one of {', '.join(FORMATS)}; got {fmt!r}")
    argv = command(team, member, root)
    name = server_name(team)
    if fmt == "claude":
        entry = {"type": "stdio", "command": argv[0], "args": argv[1:], "env": {}}
        return json.dumps({"mcpServers": {name: entry}}, indent=2)
    if fmt == "codex":
        args = ", ".join(json.dumps(a) for a in argv[1:])
        return (
            f"[mcp_servers.{name}]\ncommand = {json.dumps(argv[0])}\nargs = [{args}]\n"
            f"tool_timeout_sec = {TOOL_TIMEOUT}\n"
        )
    return json.dumps({"name": name, "command": argv[0], "args": argv[1:]}, indent=2)
