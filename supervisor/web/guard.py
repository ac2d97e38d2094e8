"""The web door's lock, as a local Jupyter server's: no data is served without the token.

- The token comes as ``Authorization: Bearer TOKEN`` (or ``X-Agentteams-Token``), or in
  the page's URL (``/?token=TOKEN``): the page is then served with it, keeps it for its
  tab in sessionStorage and takes it out of the address bar. No cookie: a browser sends a
  host's cookies to every port of that host, so any other local server (another user's
  too) would be given it. A request without it gets 401 and changes nothing.
- The page without a token and its static files (code, no data) are served to anyone:
  the page then shows the login hint, or uses the token its tab kept (a reload).
- A ``Host`` that is not the bound address is refused (421): a page of another site that
  rebinds its name to 127.0.0.1 reaches nothing.
- A request that changes something (not GET or HEAD) needs the token in a header: a URL
  is kept in logs. A look (the events stream, which an EventSource opens with no header)
  may bring it in the URL.
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qsl

from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

HEADER = b"x-agentteams-token"
SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


def _header(scope: Scope, name: bytes) -> str:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k.lower() == name), "")


class Guard:
    def __init__(self, app: ASGIApp, token: str, hosts: list[str] | None) -> None:
        self.app = app
        self.token = token.encode()
        self.hosts = hosts  # None: any (the caller said so)

    def _is_token(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self.token)

    def _from_header(self, scope: Scope) -> bool:
        bearer = _header(scope, b"authorization")
        given = bearer[7:] if bearer[:7].lower() == "bearer " else ""
        return self._is_token(given) or self._is_token(_header(scope, HEADER))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        reply = self._refusal(scope)
        if reply is not None:
            return await reply(scope, receive, send)
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> Response | None:
        host = _header(scope, b"host")
        if self.hosts is not None and host not in self.hosts:
            allowed = ", ".join(self.hosts)
            return _error(f"host {host!r} is not served here; use {allowed}", 421, scope)
        if scope["method"] in ("GET", "HEAD") and (
            scope["path"] == "/" or scope["path"].startswith("/static/")
        ):
            return None  # no data: the page holds the token only for one who brought it
        if self._from_header(scope):
            return None
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        if self._is_token(next((v for k, v in query if k == "token"), "")):  # a URL is kept in logs
            if scope["method"] in SAFE:
                return None
            return _error(
                f"{scope['method']} changes something: send the token in a header "
                "('Authorization: Bearer TOKEN' or 'X-Agentteams-Token'), not only in the URL",
                403,
                scope,
            )
        return _error(
            "a token is required: 'Authorization: Bearer TOKEN', or open the URL "
            "'agentteams serve' printed (it carries ?token=)",
            401,
            scope,
        )


KINDS = {401: "Unauthorized", 403: "TokenNotInHeader", 421: "ForeignHost"}


def _error(message: str, status: int, scope: Scope) -> Response:
    return JSONResponse({"error": message, "kind": KINDS[status]}, status)
