"""The web door as one ASGI app: the page, the JSON API (the table of operations, see
:mod:`supervisor.web.routes`), the events stream, the API's description, and, when asked,
a team's MCP endpoint at ``/mcp``; everything behind :class:`~supervisor.web.guard.Guard`."""

from __future__ import annotations

import contextlib
import hmac
import html
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from ipc import operations as io
from ipc.errors import AgentTeamsError, InvalidInput, internal_error_line
from ipc.paths import normalise_team_name
from ipc.schemas import LEAD_NAME
from ipc.team_list import scan_teams
from supervisor.client.body_limit import BodyLimit
from supervisor.client.handle import Root, TeamHandle
from supervisor.client.operations import Operation
from supervisor.web import openapi, routes
from supervisor.web.events import Hubs
from supervisor.web.guard import Guard

STATIC = Path(__file__).parent / "static"
log = logging.getLogger("agentteams.web")
PAGE_HEADERS = {
    "Cache-Control": "no-store",
    # Every script and style is ours, from this server: nothing else runs in the page.
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


class Handles:
    """One handle per team for reads and one for writes, each used by one call at a time
    (a handle's control socket is not shared between threads); a slow write (a shutdown
    waiting out its grace) does not hold up what the page reads."""

    def __init__(self, root: Root) -> None:
        self.root = root
        self.open: dict[tuple[str, bool], tuple[TeamHandle, anyio.CapacityLimiter]] = {}
        self.lock = threading.Lock()

    def _get(self, team: str, writes: bool) -> tuple[TeamHandle, anyio.CapacityLimiter]:
        key = (normalise_team_name(team), writes)  # InvalidInput for a name no team can have
        with self.lock:
            if key in self.open:
                return self.open[key]
        handle = TeamHandle(team, self.root)
        try:
            handle.store.read()  # NotFound for a team that does not exist: nothing kept
        except AgentTeamsError:
            handle.close()
            raise
        with self.lock:
            return self.open.setdefault(key, (handle, anyio.CapacityLimiter(1)))

    async def handle(self, team: str, writes: bool = False) -> tuple[TeamHandle, anyio.CapacityLimiter]:
        return await anyio.to_thread.run_sync(self._get, team, writes)

    async def run(self, team: str, op: Operation[Any, Any], args: Any) -> Any:
        handle, limiter = await self.handle(team, op.writes)
        return await anyio.to_thread.run_sync(op, handle, args, LEAD_NAME, limiter=limiter)

    def close(self) -> None:
        with self.lock:
            for handle, _ in self.open.values():
                handle.close()
            self.open.clear()


def json_response(value: Any, status: int = 200) -> Response:
    return Response(msgspec.json.encode(value), status, media_type="application/json")


def error_response(error: AgentTeamsError) -> Response:
    return json_response(routes.error_body(error), routes.status_of(error))


def internal_error(exc: Exception) -> Response:
    return json_response(routes.ErrorBody(error=internal_error_line(exc), kind="InternalError"), 500)


async def no_route(request: Request, exc: Exception) -> Response:
    """What Starlette says for a path or method it has no route for, as the API's one line
    in JSON (the page's own paths keep its plain answer)."""
    status = getattr(exc, "status_code", 404)
    path = request.url.path
    if not path.startswith(routes.PREFIX):
        return PlainTextResponse(
            str(getattr(exc, "detail", "")), status, headers=getattr(exc, "headers", None)
        )
    if status == 405:  # Starlette names one route's methods; a path has a route per method
        taken = {
            method
            for route in request.app.router.routes
            if isinstance(route, Route) and route.matches(request.scope)[0] == Match.PARTIAL
            for method in route.methods or ()
            if method != "HEAD"
        }
        message = f"{request.method} is not taken at {path}; it takes {', '.join(sorted(taken))}"
        return json_response(routes.ErrorBody(error=message, kind="MethodNotAllowed"), 405)
    message = f"no route {request.method} {path}; {routes.PREFIX}/openapi.json lists them"
    return json_response(routes.ErrorBody(error=message, kind="NoRoute"), status)


ANY_METHOD = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


async def api_miss(request: Request) -> Response:
    """An API path with no route, or a route's path with a method it does not take."""
    routed = request.app.router.routes
    partial = any(isinstance(r, Route) and r.matches(request.scope)[0] == Match.PARTIAL for r in routed)
    return await no_route(request, HTTPException(405 if partial else 404))


class SlashLess:
    """An API path with a trailing slash is the route without it (``…/tasks/`` is ``…/tasks``),
    as many REST servers take it (Express, Rails). Starlette's own answer is a redirect: not
    JSON, not followed by curl, and for a POST followed only by clients that send the body
    again."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        raw: bytes = scope.get("raw_path") or path.encode()
        if scope["type"] == "http" and path.startswith(routes.PREFIX + "/"):
            # A slash the client wrote as one (not '%2F', a part of a name) is taken off.
            while path.endswith("/") and raw.endswith(b"/"):
                path, raw = path[:-1], raw[:-1]
            scope = {**scope, "path": path, "raw_path": raw}
        await self.app(scope, receive, send)


Endpoint = Callable[[Request], Awaitable[Response]]


def _endpoint(route: routes.Route, handles: Handles) -> Endpoint:
    async def run(request: Request) -> Response:
        try:
            if route.method in ("GET", "DELETE"):
                if (await request.body()).strip():  # would be dropped unread: refused instead
                    raise InvalidInput(
                        f"{route.op}: {route.method} takes its input in the query string; send no body"
                    )
                given = routes.query_arguments(route, request.query_params.multi_items())
                args = routes.arguments(route, given, request.path_params, from_query=True)
            else:
                raw = await request.body()
                try:
                    given = msgspec.json.decode(raw) if raw.strip() else {}
                except msgspec.DecodeError as exc:
                    raise InvalidInput(f"{route.op}: the body is not JSON ({exc})") from None
                except UnicodeDecodeError:
                    raise InvalidInput(f"{route.op}: the body is not UTF-8; send JSON in UTF-8") from None
                except RecursionError:  # msgspec's answer to arrays in arrays a hundred thousand deep
                    raise InvalidInput(
                        f"{route.op}: the body is nested too deeply; send a JSON object"
                    ) from None
                args = routes.arguments(route, given, request.path_params, from_query=False)
            result = await handles.run(request.path_params["team"], route.operation, args)
        except AgentTeamsError as exc:
            return error_response(exc)
        except Exception as exc:  # a bug of ours: one line for the caller, the traceback in our log
            log.exception("%s %s failed", route.method, request.url.path)
            return internal_error(exc)
        return json_response(result)

    return run


def web_app(
    root: Root,
    *,
    token: str,
    allowed_hosts: list[str] | None,
    mcp_team: str | None = None,
    hubs: Hubs | None = None,
) -> ASGIApp:
    """The whole server. ``allowed_hosts``: the ``Host`` values served (None: any);
    ``mcp_team``: that team's lead-side MCP endpoint at ``/mcp``; ``hubs``: the event
    streams (the server ends them with :meth:`Hubs.stop` when it stops)."""
    handles = Handles(root)
    hubs = hubs or Hubs()
    page = (STATIC / "index.html").read_text()

    async def index(request: Request) -> Response:
        # The token only to the one who brought it: without it, the page is the login hint
        # (its script finds none kept for this tab either), with 401.
        given = request.query_params.get("token", "")
        known = bool(given) and hmac.compare_digest(given.encode(), token.encode())
        shown = page.replace("{{TOKEN}}", html.escape(token) if known else "")
        return HTMLResponse(shown, status_code=200 if known else 401, headers=PAGE_HEADERS)

    async def teams(request: Request) -> Response:
        found, problems = await anyio.to_thread.run_sync(scan_teams, root)
        briefs = [
            io.TeamBrief(name=c.name, description=c.description_text, members=len(c.members)) for c in found
        ]
        return json_response(io.Teams(teams=briefs, problems=problems))

    async def described(request: Request) -> Response:
        return json_response(openapi.document())

    async def events(request: Request) -> Response:
        try:
            handle, _ = await handles.handle(request.path_params["team"])
        except AgentTeamsError as exc:
            return error_response(exc)
        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(hubs.listen(handle.paths), media_type="text/event-stream", headers=headers)

    table: list[BaseRoute] = [
        Route("/", index, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        Route(routes.PREFIX + "/openapi.json", described, methods=["GET"]),
        Route(routes.PREFIX + "/teams", teams, methods=["GET"]),
        Route(routes.TEAM + "/events", events, methods=["GET"]),
    ]
    table += [Route(r.full_path, _endpoint(r, handles), methods=[r.method]) for r in routes.ROUTES]
    # Any other API path, before a mount at "" (MCP) that would take it and answer in plain text.
    table.append(Route(routes.PREFIX + "/{rest:path}", api_miss, methods=list(ANY_METHOD)))
    mcp: Starlette | None = None
    if mcp_team is not None:
        from supervisor.mcp.http import http_app

        # Behind this server's guard: the MCP app checks no token of its own.
        mcp = http_app(root, mcp_team, token=None, allowed_hosts=None, path="/mcp")
        table.append(Mount("", app=mcp))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            if mcp is not None:
                async with mcp.router.lifespan_context(mcp):
                    yield
            else:
                yield
        finally:
            with anyio.CancelScope(shield=True):
                await hubs.close()
                await anyio.to_thread.run_sync(handles.close)

    handlers = {404: no_route, 405: no_route}
    # Inside the guard: a body is read only for a request that has the token.
    middleware = [Middleware(BodyLimit), Middleware(SlashLess)]
    app = Starlette(routes=table, lifespan=lifespan, exception_handlers=handlers, middleware=middleware)
    app.router.redirect_slashes = False  # SlashLess has taken a trailing slash off; '%2F' is a name's
    return Guard(app, token, allowed_hosts)
