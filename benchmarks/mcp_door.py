"""A teammate's send → ``wait_for_messages`` returns to an MCP client: the official ``mcp``
client in this process, ``agentteams mcp`` as its server (stdio, and streamable HTTP), a
sender in another process writing and ringing as every agent does. Beside it, in the same
run: the bare floors (AF_UNIX datagram, ZeroMQ PAIR) and Claude Code's 500 ms inbox poll.

Traffic is spaced (a pause before each send, as agents' is), one message waited for at a
time. The sender stamps each message with ``CLOCK_MONOTONIC`` (one clock for every process);
the client reads it when the tool's result arrives.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import anyio

from benchmarks.common import percentiles, scratch
from benchmarks.latency import SPACED, floor_unix_dgram, floor_zmq_pair
from ipc.config import TeamConfigStore
from ipc.mailbox import Mailbox
from ipc.messaging import Messenger
from ipc.paths import TeamPaths
from ipc.wake import Waker
from supervisor.mcp.tools import TRACE_KEY

TEAM = "bench"
SENDER = "sender"
POLL = 0.5  # Claude Code's inbox poll
WARM = 5


def _send(root: str, target: str, conn: Connection, count: int, pause: float, jitter: float) -> None:
    """In a process of its own: on each go, pause (plus up to ``jitter`` s at random), then
    send one message stamped with the time, through the one path every agent sends by
    (write the inbox, then ring)."""
    paths = TeamPaths(root, TEAM)
    waker = Waker(paths.runtime_dir())
    messenger = Messenger.at(paths, waker=waker)
    for _ in range(count):
        if conn.recv() is None:
            break
        time.sleep(pause + random.uniform(0, jitter))
        messenger.send_message(SENDER, target, str(time.monotonic_ns()), "bench")
    waker.close()


def _stop(proc: Any, conn: Connection) -> None:
    try:
        conn.send(None)
    except OSError:
        pass  # it is gone already
    proc.join(10)


def _sender(root: Path, target: str, count: int, pause: float, jitter: float = 0.0) -> tuple[Any, Connection]:
    ctx = multiprocessing.get_context("spawn")  # no ZeroMQ context forked
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=_send, args=(str(root), target, theirs, count, pause, jitter), daemon=True)
    proc.start()
    return proc, ours


class Samples:
    """One way latencies, and where each went: to the operation's return in the server
    (the team's path: write, ring, wake, take) and from there to the client (the SDK)."""

    def __init__(self) -> None:
        self.total: list[float] = []
        self.team: list[float] = []
        self.transport: list[float] = []

    def stages(self) -> dict[str, float]:
        return {"team": percentiles(self.team)["p50"], "transport": percentiles(self.transport)["p50"]}


async def _measure(client: Any, conn: Connection, samples: int) -> Samples:
    from mcp import Client

    assert isinstance(client, Client)
    out = Samples()
    for i in range(WARM + samples):
        conn.send(i)  # the sender pauses, then sends: by then this wait is in the server
        result = await client.call_tool("wait_for_messages", {"timeout_s": 30})
        now = time.monotonic_ns()
        returned = (result.meta or {}).get(TRACE_KEY)
        for event in (result.structured_content or {}).get("events", []):
            if i >= WARM and event["text"].isdigit():
                sent = int(event["text"])
                out.total.append((now - sent) / 1e6)
                if isinstance(returned, int):
                    out.team.append((returned - sent) / 1e6)
                    out.transport.append((now - returned) / 1e6)
    return out


def _server_env() -> dict[str, str]:
    return {**os.environ, "AGENTTEAMS_TRACE": "1"}


def _server_args(root: Path, member: str | None, *extra: str) -> list[str]:
    args = ["-m", "supervisor.cli", "mcp", TEAM, "--root", str(root), "--fallback-poll", "600", *extra]
    return [*args, "--as", member] if member else args


def over_stdio(root: Path, member: str | None, samples: int) -> Samples:
    from mcp import Client, StdioServerParameters

    target = member or "team-lead"
    proc, conn = _sender(root, target, WARM + samples, SPACED)

    async def run() -> Samples:
        params = StdioServerParameters(
            command=sys.executable, args=_server_args(root, member), env=_server_env()
        )
        async with Client(params) as client:
            return await _measure(client, conn, samples)

    try:
        return anyio.run(run)
    finally:
        _stop(proc, conn)


def call_floor(root: Path, samples: int) -> list[float]:
    """Half the round trip of a tool call that returns at once (``wait_for_messages`` with
    nothing waiting and no time to wait), over stdio: what the SDK's transport costs one way."""
    from mcp import Client, StdioServerParameters

    async def run() -> list[float]:
        params = StdioServerParameters(command=sys.executable, args=_server_args(root, "dave"))
        async with Client(params) as client:
            out = []
            for i in range(WARM + samples):
                t0 = time.monotonic_ns()
                await client.call_tool("wait_for_messages", {"timeout_s": 0})
                if i >= WARM:
                    out.append((time.monotonic_ns() - t0) / 2e6)
                await anyio.sleep(SPACED)
            return out

    return anyio.run(run)


def over_http(root: Path, member: str, samples: int) -> Samples:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    server = subprocess.Popen(
        [sys.executable, *_server_args(root, member, "--http", "127.0.0.1:0", "--json")],
        stdout=subprocess.PIPE,
        text=True,
        env=_server_env(),
    )
    assert server.stdout is not None
    info = json.loads(server.stdout.readline())
    proc, conn = _sender(root, member, WARM + samples, SPACED)

    async def run() -> Samples:
        headers = {"Authorization": f"Bearer {info['token']}"}
        http = httpx2.AsyncClient(headers=headers, timeout=None)
        async with http, Client(streamable_http_client(info["url"], http_client=http)) as client:
            return await _measure(client, conn, samples)

    try:
        return anyio.run(run)
    finally:
        _stop(proc, conn)
        server.terminate()
        server.wait(10)


def poll_baseline(root: Path, samples: int) -> list[float]:
    """Claude Code's way: look at the inbox every 500 ms, at a moment that has nothing to do
    with the send's (the sender waits a random part of the period)."""
    box = Mailbox(root, TEAM, "poller")
    proc, conn = _sender(root, "poller", samples, SPACED, jitter=POLL)
    out: list[float] = []
    try:
        for i in range(samples):
            conn.send(i)
            while not (taken := box.mark_all_read()):
                time.sleep(POLL)
            now = time.monotonic_ns()
            out += [(now - int(m.text)) / 1e6 for m in taken if m.text.isdigit()]
    finally:
        _stop(proc, conn)
    return out


def _row(path: str, values: list[float] | Samples, samples: int) -> dict[str, Any]:
    stages = values.stages() if isinstance(values, Samples) else {}
    values = values.total if isinstance(values, Samples) else values
    row = {"path": path, "n": len(values), "lost": samples - len(values), **percentiles(values)}
    return {**row, "stages_ms": stages, "values": values}


def run(quick: bool) -> dict[str, Any]:
    samples = 40 if quick else 400
    floor_n = 40 if quick else 200
    rows = [
        _row("floor: AF_UNIX datagram", floor_unix_dgram(floor_n, SPACED), floor_n),
        _row("floor: bare ZeroMQ PAIR", floor_zmq_pair(floor_n, SPACED), floor_n),
    ]
    with scratch() as root:
        store = TeamConfigStore(root, TEAM)
        store.create(cwd=str(root))
        for name in (SENDER, "poller"):
            store.add_member(name)
        rows.append(
            _row("floor: an MCP tool call over stdio, ½ round trip", call_floor(root, samples), samples)
        )
        rows.append(_row("mcp over stdio, a member (doorbell)", over_stdio(root, "alice", samples), samples))
        rows.append(_row("mcp over streamable HTTP, a member", over_http(root, "carol", samples), samples))
        rows.append(
            _row("mcp over stdio, lead side (inbox watch only)", over_stdio(root, None, samples), samples)
        )
        polls = 8 if quick else 60
        rows.append(_row("poll every 500 ms (Claude Code)", poll_baseline(root, polls), polls))
    return {"rows": rows, "targets": targets(rows)}


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by = {r["path"]: r for r in rows}
    member = by["mcp over stdio, a member (doorbell)"]
    poll = by["poll every 500 ms (Claude Code)"]
    return [
        {
            "target": "teammate's send → wait_for_messages returns p50 ≤ 1 ms (stdio member)",
            "value": member["p50"],
            "met": member["p50"] <= 1.0,
        },
        {
            "target": "the same, p99 (ms; no target, for the record)",
            "value": member["p99"],
            "met": True,
        },
        {
            "target": "p50 lower than the 500 ms poll's, same run (ratio)",
            "value": poll["p50"] / member["p50"] if member["p50"] else float("inf"),
            "met": poll["p50"] > member["p50"],
        },
    ]
