"""Each agent's conversation as JSONL (``teams/{team}/transcripts/{agent}.jsonl``), appended
as it happens, so it can be inspected and a restarted teammate can continue from it.

A subagent writes into its parent's transcript, each line marked ``isSidechain`` with its
``agentId``, as Claude Code keeps subagent conversations; the parent's own conversation
skips them when it is read back.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from agentproc.conversation import add, has_tool_use
from ipc.clock import now_iso
from ipc.errors import NotFound
from ipc.paths import TeamPaths
from ipc.storage import append_line, lines_from_end

_entry = msgspec.json.Decoder(dict[str, Any])


class Transcript:
    def __init__(self, paths: TeamPaths, agent: str, *, sidechain: str = "") -> None:
        self.path = paths.transcript(agent)
        self.team_dir = paths.team_dir
        self.sidechain = sidechain  # the subagent writing, in its parent's transcript

    def append(self, role: str, content: Any) -> None:
        self._write({"role": role, "content": content})  # nothing once the team is deleted

    def compaction(self, summary: str, messages: list[dict[str, Any]], replaced: int) -> None:
        """Record a compaction: the full history stays above it; a resumed agent starts from
        ``messages`` (the summary and the kept tail)."""
        self._write({"type": "compaction", "summary": summary, "replaced": replaced, "messages": messages})

    def _write(self, entry: dict[str, Any]) -> None:
        if not self.team_dir.is_dir():
            return
        entry = {"timestamp": now_iso(), **entry}
        if self.sidechain:
            entry.update(isSidechain=True, agentId=self.sidechain)
        append_line(self.path, json.dumps(entry, ensure_ascii=False).encode())

    def messages(self) -> list[dict[str, Any]]:
        """The conversation as Messages API messages, from the last compaction on, trimmed
        to a valid resumable state: a trailing assistant tool_use without its results is
        dropped. Read backwards to that compaction: a resume costs what came after it, not
        the whole history above it."""
        messages = self._replay()
        if messages and _unanswered(messages[-1]):
            messages.pop()
        return messages

    def through(self, tool_use_id: str) -> list[dict[str, Any]]:
        """The conversation up to the assistant message that made the call ``tool_use_id``,
        that message included (its tool results are not written yet): what a fork of this
        agent, started by that call, continues from. NotFound if no such call is there."""
        return self._replay(until=tool_use_id)

    def _replay(self, until: str = "") -> list[dict[str, Any]]:
        since: list[dict[str, Any]] = []  # newest first
        messages: list[dict[str, Any]] = []
        for line in lines_from_end(self.path):
            try:
                e = _entry.decode(line)
            except msgspec.DecodeError:
                continue  # torn by a kill
            if e.get("agentId", "") != self.sidechain:
                continue
            if e.get("type") == "compaction" and isinstance(e.get("messages"), list):
                messages = list(e["messages"])
                break
            if e.get("role") in ("user", "assistant"):
                since.append({"role": e["role"], "content": e["content"]})
        for message in reversed(since):
            if messages and _unanswered(messages[-1]) and not _answers(message):
                messages.pop()  # its tool results were never written: killed mid-tool
            add(messages, message)  # a turn that got no answer, then the next: one user message
            if until and message["role"] == "assistant" and until in _tool_use_ids(message["content"]):
                return messages
        if until:
            raise NotFound(f"no call {until!r} in the transcript {self.path.name}")
        return messages


def _unanswered(message: dict[str, Any]) -> bool:
    return message["role"] == "assistant" and has_tool_use(message["content"])


def _answers(message: dict[str, Any]) -> bool:
    content = message["content"]
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _tool_use_ids(content: Any) -> set[str]:
    if not isinstance(content, list):
        return set()
    return {str(b.get("id")) for b in content if isinstance(b, dict) and b.get("type") == "tool_use"}
