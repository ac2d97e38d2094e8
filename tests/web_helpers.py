"""Helpers for the web door's tests: a real ``agentteams serve`` process, an HTTP client
with its token, and a Server-Sent Events reader."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
from starlette.applications import Starlette

from supervisor.web.app import web_app

TOP = Path(__file__).resolve().parents[1]


@dataclass
class Server:
    base: str  # http://127.0.0.1:PORT
    token: str
    url: str  # the page's address with ?token=
    proc: subprocess.Popen[str]

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def client(self, **kwargs: Any) -> httpx2.Client:
        return httpx2.Client(base_url=self.base, headers=self.auth, timeout=60, **kwargs)


@contextlib.contextmanager
def serving(root: Path, *extra: str) -> Iterator[Server]:
    """``agentteams serve --port 0`` over ``root``; stopped (and waited for) at the end."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "supervisor.cli",
            "serve",
            "--root",
            str(root),
            "--port",
            "0",
            "--json",
            *extra,
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=TOP,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, f"serve exited with {proc.wait()}"
        info = json.loads(line)
        yield Server(base=info["base"], token=info["token"], url=info["url"], proc=proc)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Events:
    """The events of one open stream, read as they come."""

    def __init__(self, lines: AsyncIterator[str]) -> None:
        self.lines = lines
        self.seen: list[tuple[str, Any]] = []

    async def next(self) -> tuple[str, Any]:
        name, data = "message", ""
        async for line in self.lines:
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data += line[5:].strip()
            elif not line and data:
                event = (name, json.loads(data))
                self.seen.append(event)
                return event
        raise AssertionError("the stream ended")

    async def until(
        self, name: str, matches: Callable[[Any], bool] = lambda data: True, timeout: float = 30
    ) -> Any:
        """The next event called ``name`` whose data ``matches``; the others are passed by."""
        with anyio.fail_after(timeout):
            while True:
                got, data = await self.next()
                if got == name and matches(data):
                    return data

    async def until_each(self, *wanted: tuple[str, Callable[[Any], bool]], timeout: float = 30) -> list[Any]:
        """One event for each (name, matches), in whatever order they come: two watchers
        (tasks, inboxes) need not report causally ordered changes in that order."""
        found: list[Any] = [None] * len(wanted)
        missing = set(range(len(wanted)))
        with anyio.fail_after(timeout):
            while missing:
                got, data = await self.next()
                for i in sorted(missing):
                    name, matches = wanted[i]
                    if got == name and matches(data):
                        found[i] = data
                        missing.discard(i)
                        break
        return found


@contextlib.asynccontextmanager
async def event_stream(server: Server, team: str) -> AsyncIterator[Events]:
    """``GET …/events`` open, its ``hello`` read: every change after this is on it."""
    async with (
        httpx2.AsyncClient(timeout=None, headers=server.auth) as client,
        client.stream("GET", f"{server.base}/api/v1/teams/{team}/events") as response,
    ):
        assert response.status_code == 200 and response.headers["content-type"].startswith(
            "text/event-stream"
        )
        events = Events(response.aiter_lines())
        await events.until("hello")
        yield events


def request(root: Path, method: str, path: str, **kwargs: Any) -> httpx2.Response:
    """One request to the web app in this process (no server, no port), with the token; its
    lifespan is run, so the team handles it opened are closed again."""

    async def go() -> httpx2.Response:
        app = web_app(root, token="k", allowed_hosts=None)
        inner = getattr(app, "app", None)  # inside the guard
        assert isinstance(inner, Starlette)
        async with (
            inner.router.lifespan_context(inner),
            httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1"
            ) as client,
        ):
            headers = {"Authorization": "Bearer k", **kwargs.pop("headers", {})}
            return await client.request(method, path, headers=headers, **kwargs)

    return anyio.run(go)
