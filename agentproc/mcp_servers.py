"""An agent definition's ``mcpServers``, as Claude Code runs them: each server started (stdio)
or reached (Streamable HTTP) with the official ``mcp`` client when the agent starts, its tools
offered to the model as ``mcp__{server}__{tool}`` behind the same permission policy (an MCP
tool asks unless a rule allows it: ``mcp__server`` or ``mcp__server__tool``), and closed when
the agent ends. A server that cannot be started is an error in the agent's log and the agent
goes on without it, unless the definition's ``requiredMcpServers`` names it.

The client is asynchronous and the agent is not: the clients live on an event loop in a
daemon thread of their own (an anyio blocking portal), and a tool call waits for its answer.
"""

from __future__ import annotations

import atexit
import fnmatch
import json
import logging
import math
import os
import re
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal

from agentproc.context import AgentContext
from agentproc.tools.base import Tool, ToolFailure
from ipc.agents import AgentDefinition
from ipc.errors import InvalidInput
from ipc.tool_inputs import McpArgs

log = logging.getLogger("agentteams.mcp")


def mcp_name(server: str, tool: str) -> str:
    """Claude Code's name for a server's tool; what the Messages API would refuse in a tool
    name (anything but letters, digits, ``_`` and ``-``) becomes ``_``, as Claude Code does."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"mcp__{server}__{tool}")[:64]


@dataclass(frozen=True)
class McpTool(Tool[McpArgs]):
    """A tool of an MCP server: its schema is the server's JSON Schema, not a Struct's."""

    server_description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)

    @property
    def description(self) -> str:
        return self.server_description

    def schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    def decode(self, args: dict[str, Any]) -> McpArgs:
        return McpArgs(arguments=dict(args))


def _configs(definition: AgentDefinition, cwd: Path) -> Iterator[tuple[str, Any]]:
    """(name, config) of each server the definition lists: inline ``{name: config}``, or a
    name configured in the project's ``.mcp.json`` or the user's ``~/.claude.json``."""
    known: dict[str, Any] = {}
    for path in (Path.home() / ".claude.json", cwd / ".mcp.json"):  # the project's win
        try:
            loaded = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        servers = loaded.get("mcpServers") if isinstance(loaded, dict) else None
        known.update(servers if isinstance(servers, dict) else {})
    for entry in definition.mcp_servers:
        if isinstance(entry, str):
            yield entry, known.get(entry)
        elif isinstance(entry, dict):
            yield from entry.items()
        elif isinstance(entry, tuple) and len(entry) == 2:  # the mapping form, read as items
            yield str(entry[0]), entry[1]


def _transport(name: str, config: Any, cwd: Path) -> Any:
    from mcp import StdioServerParameters

    if not isinstance(config, dict):
        raise InvalidInput(
            f"MCP server {name!r} is not configured (inline, in {cwd / '.mcp.json'} or ~/.claude.json)"
        )
    kind = config.get("type", "stdio" if "command" in config else "http")
    if kind == "stdio" and isinstance(config.get("command"), str):
        env = config.get("env")
        return StdioServerParameters(
            command=config["command"],
            args=[str(a) for a in config.get("args", [])],
            env={str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else None,
            cwd=str(cwd),
        )
    if kind in ("http", "streamable-http") and isinstance(config.get("url"), str):
        return config["url"]
    raise InvalidInput(f"MCP server {name!r}: type {kind!r} is not one this agent can start (stdio or http)")


class McpServers:
    """The definition's servers, started; ``tools`` are what they offer."""

    def __init__(self) -> None:
        self.tools: list[Tool[Any]] = []
        self.failed: dict[str, str] = {}
        self.connected: list[str] = []
        self._portal: BlockingPortal | None = None
        self._clients: list[tuple[Future[None], anyio.Event]] = []

    def start(self, ctx: AgentContext, definition: AgentDefinition) -> None:
        configs = list(_configs(definition, ctx.cwd))
        if not configs:
            return
        self._portal = _portal()

        def connect(name: str, config: Any) -> list[Tool[Any]]:
            try:
                return self._connect(name, _transport(name, config, ctx.cwd))
            except Exception as exc:  # any failure of one server: the agent goes on without it
                reason = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
                self.failed[name] = str(reason)
                log.error(
                    "%s: MCP server %r failed to start (%s); going on without it", ctx.name, name, reason
                )
                return []

        # All at once, as Claude Code connects them: one slow server does not hold the others.
        with ThreadPoolExecutor(len(configs)) as pool:
            for tools in pool.map(lambda named: connect(*named), configs):
                self.tools += tools
        missing = [
            p
            for p in definition.required_mcp_servers
            if not any(fnmatch.fnmatch(n, p) for n in self.connected)
        ]
        if missing:
            self.close()
            raise InvalidInput(
                f"{definition.name} requires the MCP server(s) {', '.join(missing)}, which did not start"
                + (f": {'; '.join(f'{k}: {v}' for k, v in self.failed.items())}" if self.failed else "")
            )
        atexit.register(self.close)

    def _connect(self, name: str, transport: Any) -> list[Tool[Any]]:
        assert self._portal is not None
        done, (client, listed, stop) = self._portal.start_task(_hold, transport, start_timeout())
        self._clients.append((done, stop))
        self.connected.append(name)
        log.info("MCP server %r: %d tool(s)", name, len(listed.tools))
        return [self._tool(name, client, tool) for tool in listed.tools]

    def _tool(self, server: str, client: Any, tool: Any) -> McpTool:
        portal = self._portal
        assert portal is not None

        def run(ctx: AgentContext, args: McpArgs) -> str:
            result = portal.call(client.call_tool, tool.name, args.arguments)
            text = "\n".join(getattr(c, "text", "") or json.dumps(c.model_dump()) for c in result.content)
            if not text and result.structured_content is not None:
                text = json.dumps(result.structured_content)
            if result.is_error:
                raise ToolFailure(text or f"{tool.name} failed")
            return text

        return McpTool(
            mcp_name(server, tool.name),
            McpArgs,
            run,
            # A server's read-only tool may run in plan mode; every MCP tool asks unless allowed.
            kind="read" if tool.annotations is not None and tool.annotations.read_only_hint else "exec",
            risk=lambda args: "an MCP server's tool, which this agent cannot judge",
            server_description=tool.description or "",
            input_schema=tool.input_schema or {"type": "object"},
        )

    def close(self) -> None:
        """Stop the servers (a stdio server's process ends with its client), then their
        event loop's thread. Idempotent: called when the agent ends and again at exit."""
        portal, self._portal = self._portal, None
        if portal is None:
            return
        atexit.unregister(self.close)
        while self._clients:
            done, stop = self._clients.pop()
            try:
                portal.call(stop.set)
                done.result(timeout=10)
            except Exception as exc:  # closing one must not keep the others open
                log.warning("an MCP client did not close cleanly: %s", exc)
        try:
            portal.call(portal.stop)
        except RuntimeError:
            pass  # its loop has ended already (the interpreter is exiting)


async def _hold(transport: Any, timeout: float, *, task_status: Any) -> None:
    """One server's client, for the agent's life: started (and its tools listed) within
    ``timeout`` seconds, then held until its stop event is set. One cancel scope holds it
    all (the client's own scopes must nest inside it); its deadline is lifted once started."""
    from mcp import Client

    stop = anyio.Event()
    with anyio.CancelScope(deadline=anyio.current_time() + timeout) as scope:
        async with Client(transport) as client:
            listed = await client.list_tools()
            scope.deadline = math.inf
            task_status.started((client, listed, stop))
            await stop.wait()
    if scope.cancelled_caught:
        raise TimeoutError(f"it did not start and list its tools within {timeout:g}s")


def start_timeout() -> float:
    """Seconds a server has to start and list its tools: Claude Code's ``MCP_TIMEOUT`` (in
    milliseconds), else 30."""
    return float(os.environ.get("MCP_TIMEOUT") or 30_000) / 1000


def _portal() -> BlockingPortal:
    """An event loop in a daemon thread (so it never holds the process at exit)."""
    ready = threading.Event()
    holder: list[BlockingPortal] = []

    async def serve() -> None:
        async with BlockingPortal() as portal:
            holder.append(portal)
            ready.set()
            await portal.sleep_until_stopped()

    threading.Thread(target=anyio.run, args=(serve,), name="mcp-clients", daemon=True).start()
    ready.wait()
    return holder[0]
