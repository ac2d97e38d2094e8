"""The MCP door: any MCP client (Claude Code, Codex, opencode, Cursor, a script) works in a
team through the tools of the table of operations, as a member (``--as NAME``) or for the
lead side. A door: it imports only the client side and ``ipc``.

- :func:`run_stdio`: ``agentteams mcp TEAM [--as NAME]``, what a client's config starts;
- :func:`http_app`: the streamable HTTP endpoint as an ASGI app (``--http``, or mounted at
  ``/mcp`` by a web server).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from supervisor.mcp.http import http_app
    from supervisor.mcp.server import run_stdio

__all__ = ["http_app", "run_stdio"]


def __getattr__(name: str) -> Any:
    # The SDK (and its web stack) loads only when the door is used: `agentteams mcp`'s
    # arguments are part of every command's parser.
    if name == "http_app":
        from supervisor.mcp.http import http_app

        return http_app
    if name == "run_stdio":
        from supervisor.mcp.server import run_stdio

        return run_stdio
    raise AttributeError(name)
