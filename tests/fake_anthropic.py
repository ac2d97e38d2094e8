"""A small local HTTP server that speaks the Anthropic Messages API with scripted replies,
plain or streamed (SSE) as the request asks, so tests run the real `anthropic` client and the
real Claude Code end to end without a network."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, dict[str, Any], dict[str, str]]  # status, body, headers
Script = Callable[[dict[str, Any], int], Reply]


def message(content: list[dict[str, Any]], stop_reason: str = "end_turn") -> Reply:
    return (
        200,
        {
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
        {},
    )


def text(value: str) -> Reply:
    return message([{"type": "text", "text": value}])


def tool_uses(*uses: tuple[str, str, dict[str, Any]]) -> Reply:
    return message(
        [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in uses], stop_reason="tool_use"
    )


def error(status: int, kind: str, retry_after_ms: int = 10) -> Reply:
    return (
        status,
        {"type": "error", "error": {"type": kind, "message": f"scripted {status}"}},
        {"retry-after-ms": str(retry_after_ms)},
    )


def sse(message: dict[str, Any]) -> bytes:
    """A message as the Messages API streams it (server-sent events), text and tool input
    each in two deltas, as a real stream splits them."""
    events: list[tuple[str, dict[str, Any]]] = []
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    events.append(("message_start", {"type": "message_start", "message": start}))
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": i,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            half = len(block["text"]) // 2
            for piece in (block["text"][:half], block["text"][half:]):
                delta = {"type": "text_delta", "text": piece}
                events.append(
                    ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
                )
        else:
            opening = {**block, "input": {}}
            events.append(
                ("content_block_start", {"type": "content_block_start", "index": i, "content_block": opening})
            )
            raw = json.dumps(block["input"])
            half = len(raw) // 2
            for piece in (raw[:half], raw[half:]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                events.append(
                    ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
                )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    end = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    events.append(("message_delta", {"type": "message_delta", "delta": end, "usage": message["usage"]}))
    events.append(("message_stop", {"type": "message_stop"}))
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


def _tokens(part: Any) -> int:
    """Scripted token counts: a quarter of the JSON's length, at least one."""
    return max(1, len(json.dumps(part, sort_keys=True)) // 4)


class PromptCache:
    """The server side of prompt caching, simulated: a request's blocks (tools, system, then
    each message's content blocks) form a prefix; a prefix that ends at a ``cache_control``
    breakpoint is written to the cache, and the longest cached prefix a later request starts
    with is read from it. ``usage`` reports what a request read, wrote and paid in full; the
    totals of everything reported are kept for tests to compare with."""

    def __init__(self, output_tokens: int = 5) -> None:
        self.cached: set[str] = set()
        self.output_tokens = output_tokens
        self.totals = {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        }

    @staticmethod
    def blocks(request: dict[str, Any]) -> list[tuple[dict[str, Any] | str, bool]]:
        """(block without cache_control, is a breakpoint) in prefix order."""
        out: list[tuple[dict[str, Any] | str, bool]] = []

        def add(block: Any) -> None:
            if isinstance(block, dict):
                out.append(
                    ({k: v for k, v in block.items() if k != "cache_control"}, "cache_control" in block)
                )
            else:
                out.append((block, False))

        for tool in request.get("tools", []):
            add(tool)
        system = request.get("system", "")
        for block in system if isinstance(system, list) else [system]:
            add(block)
        for message in request.get("messages", []):
            add(message["role"])
            content = message["content"]
            for block in content if isinstance(content, list) else [{"type": "text", "text": content}]:
                add(block)  # a string is shorthand for one text block, as the API takes it
        return out

    def __call__(self, request: dict[str, Any]) -> dict[str, int]:
        blocks = self.blocks(request)
        digest = hashlib.sha256()
        prefixes: list[tuple[str, int, bool]] = []  # (hash, tokens so far, breakpoint)
        tokens = 0
        for block, breakpoint in blocks:
            digest.update(json.dumps(block, sort_keys=True).encode())
            tokens += _tokens(block)
            prefixes.append((digest.hexdigest(), tokens, breakpoint))
        read = max((t for h, t, _ in prefixes if h in self.cached), default=0)
        marks = [(h, t) for h, t, b in prefixes if b]
        write = 0
        for h, _ in marks:
            self.cached.add(h)
        if marks and marks[-1][1] > read:
            write = marks[-1][1] - read
        usage = {
            "input_tokens": tokens - read - write,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
        }
        for key, value in usage.items():
            self.totals[key] += value
        return usage


EFFORTS = ("low", "medium", "high", "xhigh", "max")


def invalid(body: dict[str, Any]) -> Reply | None:
    """The 400 the API answers a request it cannot take with (what the fake checks: the
    effort level)."""
    effort = (body.get("output_config") or {}).get("effort", "high")
    if effort not in EFFORTS:
        problem = {"type": "invalid_request_error", "message": f"output_config.effort: {effort!r} is invalid"}
        return 400, {"type": "error", "error": problem}, {}
    return None


class FakeAnthropic:
    """Serves POST /v1/messages from ``script(request_json, n)``; keeps every request (and
    when it arrived). With ``usage``, a 200 reply reports ``usage(request)`` (e.g. a
    :class:`PromptCache`); ``headers`` are added to every 200 reply."""

    def __init__(
        self,
        script: Script,
        usage: Callable[[dict[str, Any]], dict[str, int]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.script = script
        self.usage = usage
        self.headers = headers or {}
        self.requests: list[dict[str, Any]] = []
        self.arrivals: list[tuple[float, int]] = []  # (monotonic time, status answered)
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                with outer.lock:
                    outer.requests.append(body)
                    n = len(outer.requests)
                    refused = invalid(body)
                    status, payload, headers = refused or outer.script(body, n)
                    if status == 200:
                        headers = {**outer.headers, **headers}
                        if outer.usage is not None:
                            payload = {**payload, "usage": outer.usage(body)}
                    outer.arrivals.append((time.monotonic(), status))
                streamed = body.get("stream") is True and status == 200
                data = sse(payload) if streamed else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "text/event-stream" if streamed else "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                data = json.dumps(
                    {"type": "error", "error": {"type": "not_found_error", "message": self.path}}
                )
                self.send_response(404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeAnthropic:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def text_of(content: Any) -> str:
    """The text of a message's content, a string or blocks (with cache breakpoints or not)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def last_user_text(request: dict[str, Any]) -> str:
    return text_of(last_user_content(request))


def last_user_content(request: dict[str, Any]) -> Any:
    return request["messages"][-1]["content"] if request.get("messages") else None


def tool_result_ids(request: dict[str, Any]) -> list[str]:
    content = last_user_content(request)
    if not isinstance(content, list):
        return []
    return [b["tool_use_id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
