"""Check-ins: how a parent's own model moves a synchronous subagent to the background.

A model waiting on its Agent call takes no turn until the call returns (the Messages API
needs the call's tool_result first). So while a synchronous subagent runs, every check-in
interval its parent makes a side request to its own model: the same system prompt, tool
definitions and conversation through the Agent call (a cache read of the prefix its last
request wrote), then a user message answering the waiting calls with a placeholder and
saying how long the subagent has run and what it did last. A ``TaskBackground`` call for
it moves the subagent to the background; any other reply keeps waiting. The side request
is not kept in the conversation or the transcript; its usage is the agent's like any
request's, and the decision is logged.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass
from typing import Any

from ipc.paths import TeamPaths
from ipc.storage import lines_from_end

log = logging.getLogger("agentteams.check_in")

ENV = "AGENTTEAMS_SUBAGENT_CHECK_IN"
DEFAULT_SECONDS = 30.0
TOOL = "TaskBackground"
MAX_PROGRESS = 1500  # characters of the subagent's latest progress shown to the parent
MAX_LINES = 400  # transcript lines looked back through for it
PENDING = "(still running: this is a check-in while you wait, not its result)"
NOT_RUN = "(not run yet: this is a check-in while an Agent call of this message runs)"
# The offline models' rule: a subagent whose description or prompt says so goes to the background.
OFFLINE_WORD = re.compile(r"\bbackground\b", re.IGNORECASE)


@dataclass(frozen=True)
class CheckIn:
    """What the parent's model is told about the subagent it waits for."""

    subagent: str
    description: str
    prompt: str
    seconds: int  # how long it has run
    progress: str  # its latest assistant text or tool calls, bounded ("" if none recorded)
    number: int  # 1 for the first check-in on this call


def interval(own: float | None) -> float | None:
    """Seconds between check-ins: the agent definition's ``subagentCheckIn``, else the
    environment's, else the default; None when they are off (0)."""
    if own is None:
        raw = os.environ.get(ENV, "").strip()
        try:
            own = float(raw) if raw else DEFAULT_SECONDS
        except ValueError:
            log.warning("%s=%r is not a number of seconds: using %g", ENV, raw, DEFAULT_SECONDS)
            own = DEFAULT_SECONDS
    return own if own > 0 else None


def progress(paths: TeamPaths, parent: str, subagent: str) -> str:
    """The subagent's latest assistant message in its sidechain (its text, else its tool
    calls), read back from the end of its parent's transcript; bounded."""
    path = paths.transcript(parent)
    for n, line in enumerate(lines_from_end(path)):
        if n >= MAX_LINES:
            break
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # torn by a kill
        if entry.get("agentId") != subagent or entry.get("role") != "assistant":
            continue
        return _said(entry.get("content"))[-MAX_PROGRESS:]
    return ""


def _said(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text").strip()
    calls = [
        f"{b.get('name')} {json.dumps(b.get('input'), ensure_ascii=False)[:300]}"
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    return "\n".join([*([text] if text else []), *(f"(calling {c})" for c in calls)])


def offer(check: CheckIn) -> str:
    """The check-in turn the parent's model reads after the placeholder results."""
    what = f' ("{check.description}")' if check.description else ""
    done = check.progress or "(nothing recorded yet)"
    call = json.dumps({"task_id": check.subagent})
    return (
        f"[check-in {check.number}] Your synchronous subagent {check.subagent}{what} has run for "
        f"{check.seconds} s and you are still waiting for its result. Its latest progress:\n{done}\n\n"
        f"Choose one: call {TOOL} {call} to stop waiting (your Agent call then returns async_launched "
        "at once, the subagent runs on uninterrupted and its result arrives once, later, as a "
        "<task-notification>), or reply with anything else (e.g. 'wait') to keep waiting. No other "
        "tool runs now, and this exchange is not kept in your conversation."
    )


def side_messages(
    messages: list[dict[str, Any]], answered: list[dict[str, Any]], check: CheckIn
) -> list[dict[str, Any]]:
    """The conversation through the assistant message whose Agent call waits, then one user
    message: every call of that message answered (what ran already with its result, the
    rest with a placeholder), and the offer."""
    calls = messages[-1]["content"] if messages and messages[-1]["role"] == "assistant" else []
    done = {b["tool_use_id"]: b for b in answered}
    results = []
    waiting = True
    for block in calls if isinstance(calls, list) else []:
        if not isinstance(block, dict) or block.get("type") != "tool_use":
            continue
        if block["id"] in done:
            results.append(done[block["id"]])
            continue
        results.append(
            {"type": "tool_result", "tool_use_id": block["id"], "content": PENDING if waiting else NOT_RUN}
        )
        waiting = False  # calls run in order: the first unanswered one is the Agent call that waits
    return [*messages, {"role": "user", "content": [*results, {"type": "text", "text": offer(check)}]}]


def chose_background(content: list[dict[str, Any]], subagent: str) -> bool:
    """Whether a reply to the offer calls TaskBackground for this subagent."""
    return any(
        b.get("type") == "tool_use"
        and b.get("name") == TOOL
        and isinstance(b.get("input"), dict)
        and b["input"].get("task_id") in (subagent, None, "")
        for b in content
    )


def offline_answer(agent: str, check: CheckIn) -> bool:
    """The offline models' deterministic answer (no request): to the background at the first
    check-in when the subagent's description or prompt says "background", else keep waiting."""
    moved = bool(OFFLINE_WORD.search(check.description) or OFFLINE_WORD.search(check.prompt))
    return logged(agent, check, moved, "the offline rule")


def logged(agent: str, check: CheckIn, moved: bool, how: str) -> bool:
    log.info(
        "%s: check-in %d on subagent %s after %d s (%s): %s",
        agent,
        check.number,
        check.subagent,
        check.seconds,
        how,
        "moved to the background" if moved else "keeps waiting",
    )
    return moved
