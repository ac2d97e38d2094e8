"""Context compaction: when a request's input passes ``AGENTTEAMS_COMPACT_AT`` (default 0.8)
of the context window (``AGENTTEAMS_CONTEXT_TOKENS``, default the model's), the older turns
are replaced by a summary the model writes. What stays is always a valid conversation: the
summary opens it as a user message, and the latest exchange follows unchanged, so every
``tool_use`` keeps its ``tool_result``."""

from __future__ import annotations

import os
from typing import Any

from agentproc.conversation import add, has_tool_use

DEFAULT_WINDOW = 200_000  # every current Claude model's standard context window

SUMMARY_REQUEST = (
    "Your conversation is about to be compacted to fit your context window. Write a summary "
    "that lets you carry on without the earlier turns: your role and team, the task you are "
    "on (its id, what is done and what is left), files and commands that matter, decisions "
    "made and promises to teammates, and what you were about to do next. Answer with the "
    "summary only; do not call tools."
)
SUMMARY_INTRO = "This conversation was compacted. A summary of the earlier part, written by you:"


def threshold() -> int:
    window = int(os.environ.get("AGENTTEAMS_CONTEXT_TOKENS", str(DEFAULT_WINDOW)))
    return int(window * float(os.environ.get("AGENTTEAMS_COMPACT_AT", "0.8")))


def tail_start(messages: list[dict[str, Any]]) -> int:
    """Where the kept part starts: the last user message, with the assistant message before
    it when that one asked for tools (its tool_results are in the last user message)."""
    last = len(messages) - 1
    if (
        last >= 1
        and messages[last - 1]["role"] == "assistant"
        and has_tool_use(messages[last - 1]["content"])
    ):
        return last - 1
    return last


def summary_request(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation with the request to summarise appended to its last user message."""
    last = messages[-1]
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    return [*messages[:-1], {**last, "content": [*blocks, {"type": "text", "text": SUMMARY_REQUEST}]}]


def compacted(messages: list[dict[str, Any]], summary: str) -> list[dict[str, Any]]:
    """``messages`` with everything before the kept tail replaced by ``summary``."""
    start = tail_start(messages)
    opening = {"role": "user", "content": [{"type": "text", "text": f"{SUMMARY_INTRO}\n\n{summary}"}]}
    kept = [opening]
    for message in messages[start:]:
        add(kept, message)
    return kept
