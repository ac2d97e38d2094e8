"""The shape of a Messages API conversation, kept valid as it is built."""

from __future__ import annotations

from typing import Any


def add(messages: list[dict[str, Any]], message: dict[str, Any]) -> None:
    """Append ``message``, merged into the last one if that has the same role: the roles must
    alternate. A turn that failed before the model answered, or a teammate killed between its
    tool results and the reply, leaves a user message last; the next turn's joins it."""
    if not messages or messages[-1]["role"] != message["role"]:
        messages.append(message)
        return
    last = messages[-1]
    messages[-1] = {**last, "content": [*_blocks(last["content"]), *_blocks(message["content"])]}


def has_tool_use(content: Any) -> bool:
    """Whether a message's content asks for tools (its tool_results must follow)."""
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_use" for b in content
    )


def _blocks(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
