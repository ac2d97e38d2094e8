"""The MCP door over streamable HTTP: ``agentteams mcp TEAM --http HOST:PORT``, and the ASGI
app a web server mounts (:func:`http_app`).

Locked as a local Jupyter server is: a token is required on every request (``Authorization:
Bearer TOKEN``), a request whose ``Host`` is not the bound address is refused (DNS
rebinding), and it binds 127.0.0.1 unless told otherwise.

With a member, the server process is that member while it serves: it joins at start and
leaves at the end. A client that ends its session (an HTTP ``DELETE``) while no other
session is open leaves too; its next request joins again. (Clients of the 2026 protocol
keep no session: for them the member lasts as long as the server.)
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import os
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ipc.errors import InvalidInput
from ipc.launch import DEFAULT_FALLBACK_POLL
from supervisor.client.body_limit import MAX_BODY_BYTES, BodyLimit
from supervisor.client.handle import Root, TeamHandle
from supervisor.mcp.member import Membership
from supervisor.mcp.server import build
from supervisor.mcp.tools import Door

SESSION_HEADER = b"mcp-session-id"


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in headers if k.lower() == name), None)


class Guard:
    """Refuses requests without the token or for another host, before the MCP app sees them."""

    def __init__(self, app: ASGIApp, token: str | None, hosts: list[str] | None) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = scope["headers"]
            host = _header(headers, b"host")
            if self.hosts is not None and host not in self.hosts:
                allowed = ", ".join(self.hosts)
                said = f"host {host!r} is not served here; use {allowed}"
                reply = JSONResponse({"error": said, "kind": "ForeignHost"}, 421)  # as the web door says it
                return await reply(scope, receive, send)
            bearer = _header(headers, b"authorization") or ""
            given = bearer[7:] if bearer[:7].lower() == "bearer " else ""  # the scheme in any case
            if self.token is not None and not hmac.compare_digest(given.encode(), self.token.encode()):
                said = "a token is required: 'Authorization: Bearer TOKEN'"
                reply = JSONResponse({"error": said, "kind": "Unauthorized"}, 401)
                return await reply(scope, receive, send)
        await self.app(scope, receive, send)


class Sessions:
    """Follows the client's sessions, so that the member leaves when the last one ends."""

    def __init__(self, app: ASGIApp, door: Door, membership: Membership | None) -> None:
        self.app = app
        self.door = door
        self.membership = membership
        self.open: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        member = self.membership
        if scope["type"] != "http" or member is None:
            return await self.app(scope, receive, send)
        method = scope["method"]
        if method != "DELETE" and not member.joined:
            await self.door.run_sync(member.join)
        answer: dict[str, Any] = {}
        held: list[Message] = []  # a DELETE's answer goes out once the member has left

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
                answer["session"] = _header(list(message.get("headers", [])), SESSION_HEADER)
            if method == "DELETE":
                held.append(message)
            else:
                await send(message)

        await self.app(scope, receive, watch)
        if answer.get("session") and answer.get("status", 500) < 400:
            self.open.add(answer["session"])
        if method == "DELETE":
            if answer.get("status", 500) < 300:
                self.open.discard(_header(scope["headers"], SESSION_HEADER) or "")
                if not self.open:
                    await self.door.run_sync(member.leave)
            for message in held:
                await send(message)


def http_app(
    root: Root,
    team: str,
    as_member: str | None = None,
    *,
    token: str | None,
    allowed_hosts: list[str] | None,
    path: str = "/mcp",
    fallback_poll: float = DEFAULT_FALLBACK_POLL,
) -> Starlette:
    """The MCP streamable HTTP endpoint for ``team`` at ``path``, as an ASGI app.

    ``as_member``: the session is that member (joined while the app runs). ``token``: every
    request must carry ``Authorization: Bearer TOKEN``. ``allowed_hosts``: the ``Host``
    values served (``"127.0.0.1:8765"``). Both must be given: None (no check) only for a
    caller that checks them itself, as a web server that mounts this behind its own door
    does, so that an open endpoint is never the default. A server that mounts the app must run
    its lifespan (``app.router.lifespan_context(app)``): Starlette does not run a mounted
    app's by itself, and the MCP sessions live in it.
    """
    handle = TeamHandle(team, root)
    handle.store.read()  # NotFound, one line, before anything serves
    membership = Membership(handle, as_member, fallback_poll=fallback_poll) if as_member else None
    if membership is not None:
        membership.check()
    door = Door(handle, membership.name if membership else None)
    server = build(door)
    # Host checks are the Guard's; the SDK's own (for loopback names) would refuse a mount
    # under another host name that the caller allowed.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    # The SDK's own limit (4 MiB, answered in plain text) is below the largest legal request of
    # a client that escapes what is not ASCII: BodyLimit, in front, holds the HTTP doors' one limit.
    inner = server.streamable_http_app(
        streamable_http_path=path, transport_security=security, max_request_body_size=MAX_BODY_BYTES
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            if membership is not None:
                await door.run_sync(membership.join)
            async with inner.router.lifespan_context(inner):
                yield
        finally:
            with anyio.CancelScope(shield=True):
                if membership is not None:
                    await door.run_sync(membership.close)
                await door.run_sync(handle.close)

    app = Guard(BodyLimit(Sessions(inner, door, membership)), token, allowed_hosts)
    return Starlette(routes=[Mount("", app=app)], lifespan=lifespan)


def listen(address: str) -> socket.socket:
    """A listening socket on ``HOST:PORT`` (port 0: any free one); ``PORT`` or ``:PORT``
    alone is 127.0.0.1, this machine only, as ``serve`` binds when no host is given."""
    host, _, port = address.strip().rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise InvalidInput(
            f"--http wants [HOST:]PORT with a port of 0-65535, e.g. 127.0.0.1:8765 or 8765; got {address!r}"
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and
    # without it each small response waits for a delayed ACK (40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, int(port)))
    except OSError as exc:
        sock.close()
        taken = "; another server has that port: pick another (port 0 lets the system choose)"
        why = taken if exc.errno == errno.EADDRINUSE else ""
        raise InvalidInput(f"cannot listen on {address}: {exc.strerror}{why}") from None
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


def hosts_for(sock: socket.socket) -> list[str]:
    """The Host header values that name this socket's address: the bound address (and
    ``localhost`` for loopback); for a wildcard bind, which no client names, this machine's
    names and addresses too."""
    host, port = sock.getsockname()[:2]
    names = [f"[{host}]" if ":" in host else host]
    if host in ("127.0.0.1", "::1"):
        names += ["localhost"]
    if host in ("0.0.0.0", "::"):
        import psutil

        found = {socket.gethostname(), socket.getfqdn(), "localhost"}
        for addresses in psutil.net_if_addrs().values():
            for a in addresses:
                if a.family in (socket.AF_INET, socket.AF_INET6):
                    address = a.address.split("%")[0]
                    found.add(f"[{address}]" if ":" in address else address)
        names += sorted(found)
    return [f"{name}:{port}" for name in names]


def serve(
    app: ASGIApp,
    sock: socket.socket,
    on_ready: Callable[[], None],
    on_stop: Callable[[], None] | None = None,
) -> None:
    """Serve until interrupted (Ctrl-C, SIGTERM); the app's lifespan ends cleanly.
    ``on_ready`` is called once the lifespan has started (the member has joined);
    ``on_stop`` as the stop begins (in the signal handler), to end responses that would
    otherwise stream on (uvicorn waits for them)."""

    async def app_then_ready(scope: Scope, receive: Receive, send: Send) -> None:
        async def tell(message: Message) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                on_ready()

        await app(scope, receive, tell if scope["type"] == "lifespan" else send)

    config = uvicorn.Config(app_then_ready, log_level="warning", lifespan="on", timeout_graceful_shutdown=3)
    server = uvicorn.Server(config)
    if on_stop is not None:
        handle_exit = server.handle_exit

        def stopping(sig: int, frame: Any) -> None:
            on_stop()
            handle_exit(sig, frame)

        server.handle_exit = stopping  # type: ignore[method-assign]
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def new_token() -> str:
    return os.urandom(18).hex()
