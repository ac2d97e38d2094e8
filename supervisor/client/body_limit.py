"""The HTTP doors' limit on a request's body: one ASGI wrapper that the web door (its API and
the ``/mcp`` it mounts) and ``agentteams mcp --http`` both put in front of their apps.

Both apps read a whole body into memory before they look at it (Starlette's
``request.body()``, the MCP SDK's transport), so without a limit a client could make the
server hold as much as it cares to send. The wrapper reads the body first, stops as soon as it
passes the limit, and refuses it with 413 and one line of JSON, as the API says every error:
a body whose ``Content-Length`` is over the limit is refused before a byte of it is read.

Starlette's ``RequestBodyLimitMiddleware`` answers in plain text, and raises from inside the
read, where an API route turns every exception into its own error; the MCP SDK's limit
answers in plain text too, at 4 MiB (below the largest legal request, see below), so the
MCP door raises it to this one and answers before it.
"""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ipc.mailbox import MAX_TEXT_BYTES

# The largest legal request carries two texts of 1 MiB: a task's subject and its description
# (a message's text and summary share one MiB). A client that escapes what is not ASCII, as
# Python's json.dumps does unless told otherwise, writes a two-byte character as six bytes
# ('\u00e9'): three times its size, 6 MiB for the two. 8 MiB is that and room for the rest.
MAX_BODY_BYTES = 8 * 1024 * 1024
KIND = "BodyTooLarge"


class BodyLimit:
    """Reads a request's body (at most ``limit`` bytes) before ``app`` runs, then hands it on
    as one message; the messages after it (a disconnect) come from the client as they arrive."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = next((v for k, v in scope["headers"] if k.lower() == b"content-length"), b"")
        if declared.isdigit() and int(declared) > self.limit:
            said = f"the request's body is {int(declared)} bytes; the limit is {self.limit}"
            return await self._refuse(said, scope, receive, send)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: no one to answer
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:  # the rest is never read (the server drops it with the connection)
                said = f"the request's body is over {self.limit} bytes, the limit"
                return await self._refuse(said, scope, receive, send)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        whole: Message | None = {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        async def replay() -> Message:
            nonlocal whole
            if whole is None:
                return await receive()
            message, whole = whole, None
            return message

        await self.app(scope, replay, send)

    async def _refuse(self, said: str, scope: Scope, receive: Receive, send: Send) -> None:
        error = f"{said} (a message's text is at most {MAX_TEXT_BYTES} bytes)"
        # Connection: close: the unread rest of the body must not be taken for a next request.
        reply = JSONResponse({"error": error, "kind": KIND}, 413, headers={"Connection": "close"})
        await reply(scope, receive, send)
