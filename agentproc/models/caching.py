"""Prompt caching: breakpoints (``cache_control: ephemeral``) on the tools + system prefix
and on the conversation's two latest user turns, so that each request reads the prefix the
previous one wrote (a latest turn that answers tool calls and then says more, as a fork's
directive does, gets both inside it instead: on its last tool result and its end). The conversation itself is not touched: the request gets copies of the
few blocks that carry a breakpoint (the API allows four)."""

from __future__ import annotations

import os
from typing import Any

EPHEMERAL = {"type": "ephemeral"}


def enabled() -> bool:
    return os.environ.get("AGENTTEAMS_PROMPT_CACHING", "1") != "0"


def _marked(block: dict[str, Any]) -> dict[str, Any]:
    return {**block, "cache_control": EPHEMERAL}


def _mark_last_block(message: dict[str, Any]) -> dict[str, Any]:
    content = message["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not content:
        return message
    return {**message, "content": [*content[:-1], _marked(content[-1])]}


def _answers_then_text(content: Any) -> bool:
    return (
        isinstance(content, list)
        and len(content) >= 2
        and content[-1].get("type") == "text"
        and content[-2].get("type") == "tool_result"
    )


def request(
    system: str, tools: list[dict[str, Any]], messages: list[dict[str, Any]], *, cache: bool
) -> dict[str, Any]:
    """The ``system``, ``tools`` and ``messages`` parameters of one request."""
    if not cache:
        return {"system": system, "tools": tools, "messages": messages}
    marked_tools = [*tools[:-1], _marked(tools[-1])] if tools else tools
    # Text content always as blocks: a turn keeps one form whether it carries a breakpoint
    # (this request) or not (the next), so the prefix the next request reads is the same.
    marked_messages = [
        {**m, "content": [{"type": "text", "text": m["content"]}]} if isinstance(m["content"], str) else m
        for m in messages
    ]
    users = [i for i, m in enumerate(messages) if m["role"] == "user"][-2:]
    if users and _answers_then_text(marked_messages[users[-1]]["content"]):
        # Tool results, then a turn's text (a fork's directive): the results are what forks
        # of one call share, so the second breakpoint goes there, the next fork reads it.
        last = marked_messages[users[-1]]["content"]
        marked_messages[users[-1]] = {
            **marked_messages[users[-1]],
            "content": [*last[:-2], _marked(last[-2]), _marked(last[-1])],
        }
        users = []
    for i in users:
        marked_messages[i] = _mark_last_block(marked_messages[i])
    return {
        "system": [_marked({"type": "text", "text": system})],
        "tools": marked_tools,
        "messages": marked_messages,
    }
