"""An agent's transcript (``teams/{team}/transcripts/{agent}.jsonl``) as a door shows it to
people: the last entries, each turn's text, tool calls and their results as parts. Read
backwards from the end, so a long transcript costs only what is shown; a line that does not
parse (a write cut short by a crash) is skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ipc.operations import TranscriptEntry, TranscriptPart
from ipc.storage import lines_from_end

MAX_TEXT = 4000  # characters of one part: a tool's long output is cut, the file keeps it


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"… ({len(text) - MAX_TEXT} more characters)"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text_of(c.get("text", c.get("content", ""))) if isinstance(c, dict) else str(c) for c in content
        )
    return json.dumps(content, ensure_ascii=False)


def _part(block: Any) -> TranscriptPart:
    if not isinstance(block, dict):
        return TranscriptPart(type="text", text=_cut(str(block)))
    kind = str(block.get("type", "text"))
    if kind == "tool_use":
        return TranscriptPart(
            type=kind, name=str(block.get("name", "")), id=str(block.get("id", "")), input=block.get("input")
        )
    if kind == "tool_result":
        return TranscriptPart(
            type=kind,
            id=str(block.get("tool_use_id", "")),
            text=_cut(_text_of(block.get("content", ""))),
            is_error=bool(block.get("is_error", False)),
        )
    return TranscriptPart(type=kind, text=_cut(_text_of(block.get("text", block.get("thinking", "")))))


def entry_of(raw: dict[str, Any]) -> TranscriptEntry:
    if raw.get("type") == "compaction":
        summary = TranscriptPart(type="text", text=_cut(str(raw.get("summary", ""))))
        return TranscriptEntry(role="compaction", timestamp=str(raw.get("timestamp", "")), parts=[summary])
    content = raw.get("content", "")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
    return TranscriptEntry(
        role=str(raw.get("role", "")),
        timestamp=str(raw.get("timestamp", "")),
        sidechain=str(raw.get("agentId", "")) if raw.get("isSidechain") else "",
        parts=[_part(b) for b in blocks],
    )


def last_entries(path: Path, limit: int) -> list[TranscriptEntry]:
    """The last ``limit`` entries (0: all), oldest first; [] when there is no transcript."""
    found: list[TranscriptEntry] = []
    for line in lines_from_end(path):
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        if isinstance(raw, dict):
            found.append(entry_of(raw))
        if limit and len(found) >= limit:
            break
    return found[::-1]
