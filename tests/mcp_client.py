"""The official ``mcp`` Python client in a process of its own, so a test can kill it with
SIGKILL: ``python tests/mcp_client.py ROOT TEAM NAME TASK_ID [--http URL TOKEN]``. It joins
as NAME (stdio: it starts ``agentteams mcp`` itself), claims the task, prints ``claimed``
and the server's pid, then waits for messages until it is killed."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def stdio_params(root: str, team: str, name: str | None, *extra: str) -> StdioServerParameters:
    args = ["-m", "supervisor.cli", "mcp", team, "--root", root, *extra]
    if name:
        args += ["--as", name]
    return StdioServerParameters(command=sys.executable, args=args)


async def hold(server: Any, task_id: str, http: httpx2.AsyncClient | None = None) -> None:
    async with Client(server) as client:
        claimed = await client.call_tool("task_claim", {"id": task_id})
        assert not claimed.is_error, claimed.content
        status = await client.call_tool("team_status", {})
        print("claimed", json.dumps(status.structured_content), flush=True)
        while True:
            await client.call_tool("wait_for_messages", {"timeout_s": 3600})


def main(argv: list[str]) -> None:
    root, team, name, task_id = argv[:4]
    if len(argv) > 4 and argv[4] == "--http":
        url, token = argv[5], argv[6]

        async def over_http() -> None:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=None) as http:
                await hold(streamable_http_client(url, http_client=http), task_id, http)

        anyio.run(over_http)
    else:
        anyio.run(hold, stdio_params(root, team, name), task_id)


if __name__ == "__main__":
    main(sys.argv[1:])
