"""The web door's lock, as a local Jupyter server's: nothing is served without the token.

- The token comes as ``Authorization: Bearer TOKEN`` (or ``X-Agentteams-Token``), or once
  in the page's URL (``/?token=TOKEN``): that answer sets an HttpOnly, SameSite=Strict
  cookie and sends the browser to the same URL without it, so the token leaves the address
  bar and the history. A request without it gets 401 and changes nothing; the page's own
  401 is a login hint and nothing else.
- A ``Host`` that is not the bound address is refused (421): a page of another site that
  rebinds its name to 127.0.0.1 reaches nothing.
- A request that changes something (not GET or HEAD) needs the token in a header: a cookie
  alone is what a cross-site form would bring (CSRF), and a URL is kept in logs. The page
  reads its token from itself (served only to a request that had it) and sends the header.
"""

from __future__ import annotations

import hmac
from http.cookies import SimpleCookie
from importlib import resources
from urllib.parse import parse_qsl, urlencode

from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

COOKIE = "agentteams-token"
HEADER = b"x-agentteams-token"
SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


def _header(scope: Scope, name: bytes) -> str:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k.lower() == name), "")


def login_page() -> str:
    return resources.files("supervisor.web").joinpath("static/login.html").read_text()


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

    def _from_cookie(self, scope: Scope) -> bool:
        cookie: SimpleCookie = SimpleCookie()
        try:
            cookie.load(_header(scope, b"cookie"))
        except Exception:  # a malformed cookie header is no token
            return False
        morsel = cookie.get(COOKIE)
        return morsel is not None and self._is_token(morsel.value)

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
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        in_url = next((v for k, v in query if k == "token"), "")
        url_token = self._is_token(in_url)
        if scope["method"] == "GET" and url_token and not scope["path"].startswith("/api/"):
            # The page's link: keep the token in a cookie, take it out of the address bar.
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            reply = RedirectResponse(scope["path"] + ("?" + rest if rest else ""), 303)
            reply.set_cookie(COOKIE, in_url, httponly=True, samesite="strict", path="/")
            return reply
        if self._from_header(scope):
            return None
        # A URL is kept in logs and histories: it may carry the token only to a look.
        if url_token or self._from_cookie(scope):
            if scope["method"] in SAFE:
                return None
            where = "the URL" if url_token else "the cookie"
            return _error(
                f"{scope['method']} changes something: send the token in a header "
                f"('Authorization: Bearer TOKEN' or 'X-Agentteams-Token'), not only in {where}",
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
    if scope["path"] == "/" and status == 401:
        return HTMLResponse(login_page(), status)
    return JSONResponse({"error": message, "kind": KINDS[status]}, status)
