"""The MCP server over one team, on the official ``mcp`` SDK's low-level server: the tools of
:mod:`supervisor.mcp.tools`, served over stdio (what a client's config starts) until the
client goes away."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from ipc.launch import DEFAULT_FALLBACK_POLL
from supervisor.client.handle import TeamHandle
from supervisor.mcp.member import Membership
from supervisor.mcp.tools import Door

NAME = "agentteams"


def instructions(door: Door) -> str:
    team = door.team.name
    if door.actor == "team-lead":
        return (
            f"You act for the lead of the agent team {team!r}: spawn and shut down teammates, create and "
            "assign tasks, send messages, answer teammates' plan and permission requests. "
            "wait_for_messages returns the moment a teammate writes to the lead."
        )
    return (
        f"You are {door.actor!r}, a member of the agent team {team!r}. Teammates and the lead send you "
        "messages and assign you tasks: call wait_for_messages to receive them (it returns the moment one "
        "arrives). Claim tasks with task_claim, mark them completed with task_update, and report with "
        "send_message. Answer a shutdown request with answer_request."
    )


def build(door: Door) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=door.tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await door.call(params.name, params.arguments or {}, progress=ctx.session.report_progress)

    return Server(
        NAME, version="1", instructions=instructions(door), on_list_tools=list_tools, on_call_tool=call_tool
    )


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        passed, given = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def answer_unreadable() -> None:
            """A line that is not JSON-RPC is answered with a parse error (the SDK drops it
            unanswered, and its client waits out its timeout); the rest go to the server."""
            async with passed:
                async for item in read:
                    if isinstance(item, Exception):
                        await write.send(SessionMessage(parse_error(item)))
                    else:
                        await passed.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(answer_unreadable)
            await server.run(given, write, server.create_initialization_options())


def parse_error(exc: Exception) -> types.JSONRPCError:
    """The answer to a line that could not be read, to its request's id when the line has one."""
    line, said, code = "", str(exc), types.PARSE_ERROR
    if isinstance(exc, ValidationError) and exc.errors():
        problem = exc.errors()[0]
        line, said = str(problem["input"]), problem["msg"]
        if problem["type"] != "json_invalid":  # JSON, not a JSON-RPC message (its id is not at hand)
            code, line = types.INVALID_REQUEST, ""
    request_id: types.RequestId | None = None
    with contextlib.suppress(ValueError):  # Python's json reads the lone surrogates the SDK refuses
        found = json.loads(line)
        if isinstance(found, dict) and "method" in found and type(found.get("id")) in (int, str):
            request_id = found["id"]  # a request's (a response's id would be one of the client's own)
    said = said.splitlines()[0] if said.strip() else type(exc).__name__
    what = "Parse error" if code == types.PARSE_ERROR else "Invalid request"
    error = types.ErrorData(code=code, message=f"{what}: {said}; send one JSON-RPC message per line")
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


def run_stdio(team: TeamHandle, member: str | None, *, fallback_poll: float = DEFAULT_FALLBACK_POLL) -> None:
    """Serve ``team`` over stdin and stdout until the client closes them (or the process is
    told to stop). With ``member``, the session is that member while it lasts."""
    membership = Membership(team, member, fallback_poll=fallback_poll) if member else None
    try:
        if membership is not None:
            membership.join()
        door = Door(team, membership.name if membership else None)
        anyio.run(_serve_stdio, build(door))
    finally:
        if membership is not None:
            membership.close()
        team.close()
