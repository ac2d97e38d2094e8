"""WebFetch: a page as text. It reaches the network, so it asks as Claude Code's does, by
domain (an allow rule ``WebFetch(domain:example.com)`` lets it run unasked); a page it
cannot reach is an error the model can read, naming why."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from html.parser import HTMLParser
from urllib.parse import urlparse

from agentproc.context import AgentContext
from agentproc.tools.base import Tool, ToolFailure
from ipc.tool_inputs import WebFetchInput

MAX_BYTES = 5_000_000
MAX_CHARS = 100_000


class _Text(HTMLParser):
    """The text of an HTML page, without its scripts and styles."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "noscript"):
            self.skipping += 1
        elif tag in ("p", "br", "div", "li", "tr", "h1", "h2", "h3", "h4", "pre"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "noscript") and self.skipping:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def _host(url: str) -> str:
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ToolFailure(f"WebFetch takes an http or https URL, not {url!r}")
    return parsed.hostname


def _fetch(ctx: AgentContext, args: WebFetchInput) -> str:
    _host(args.url)
    request = urllib.request.Request(args.url, headers={"User-Agent": "agentteams-webfetch"})
    timeout = float(os.environ.get("AGENTTEAMS_WEBFETCH_TIMEOUT", "30"))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read(MAX_BYTES)
            kind = response.headers.get_content_type()
            charset = response.headers.get_content_charset() or "utf-8"
    except urllib.error.HTTPError as exc:
        raise ToolFailure(f"{args.url} answered HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ToolFailure(
            f"WebFetch could not reach {args.url} ({reason}); this machine may have no network"
        ) from None
    text = raw.decode(charset, errors="replace")
    if kind in ("text/html", "application/xhtml+xml"):
        parser = _Text()
        parser.feed(text)
        text = "".join(parser.parts)
    text = "\n".join(line.strip() for line in text.splitlines() if line.strip())
    head = f"Content of {args.url}" + (f" (asked: {args.prompt})" if args.prompt else "")
    return f"{head}:\n\n{text[:MAX_CHARS]}"


def _domain(args: WebFetchInput) -> str | None:
    try:
        return f"domain:{_host(args.url)}"
    except ToolFailure:
        return None


def _risk(args: WebFetchInput) -> str:
    return f"it fetches {args.url} from the network"


WEB_FETCH = Tool("WebFetch", WebFetchInput, _fetch, kind="read", subject=_domain, risk=_risk)
