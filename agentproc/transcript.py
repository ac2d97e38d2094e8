"""Each agent's conversation as JSONL (``teams/{team}/transcripts/{agent}.jsonl``), appended
as it happens, so it can be inspected and a restarted teammate can continue from it."""

from __future__ import annotations

import json
from typing import Any

from ipc.clock import now_iso
from ipc.paths import TeamPaths
from ipc.storage import append_line, read_jsonl


class Transcript:
    def __init__(self, paths: TeamPaths, agent: str) -> None:
        self.path = paths.transcript(agent)

    def append(self, role: str, content: Any) -> None:
        append_line(
            self.path,
            json.dumps(
                {"timestamp": now_iso(), "role": role, "content": content}, ensure_ascii=False
            ).encode(),
        )

    def entries(self) -> list[dict[str, Any]]:
        """Every user and assistant entry; a line torn by a kill is skipped."""
        return [e for e in read_jsonl(self.path, dict[str, Any]) if e.get("role") in ("user", "assistant")]

    def messages(self) -> list[dict[str, Any]]:
        """The conversation as Messages API messages, trimmed to a valid resumable state:
        a trailing assistant tool_use without its results is dropped."""
        messages = [{"role": e["role"], "content": e["content"]} for e in self.entries()]
        while messages and messages[-1]["role"] == "assistant" and _has_tool_use(messages[-1]["content"]):
            messages.pop()
        return messages


def _has_tool_use(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_use" for b in content
    )
