"""The rules of the task list that need no files: claim results, what one listing says is
claimable, the auto-claim prompt, and the checks on a task's text."""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec
from msgspec import Struct

from ipc.errors import InvalidInput
from ipc.schemas import Task

ClaimReason = Literal[
    "task_not_found", "already_claimed", "already_resolved", "blocked", "agent_busy", "failed"
]
STATUSES = ("pending", "in_progress", "completed", "deleted")
MAX_DESCRIPTION_BYTES = 1024 * 1024  # the same limit as a message


class ClaimResult(Struct, kw_only=True):
    success: bool
    reason: ClaimReason | None = None
    task: Task | None = None


def why_not(result: ClaimResult) -> str:
    """A refused claim's reason code (Claude Code's) in words, naming what stands in the way."""
    task = result.task
    if result.reason == "already_claimed" and task is not None:
        return f"{task.owner_name} owns it"
    if result.reason == "already_resolved":
        return "it is completed"
    if result.reason == "blocked" and task is not None:
        return f"it waits for {', '.join('#' + b for b in task.blocked_by)} to complete"
    if result.reason == "agent_busy":
        return "the agent has a task in progress already; finish that one first"
    if result.reason == "failed":
        return "it failed; set its status to pending to retry it"
    return "no such task"


@dataclass
class Change:
    """What an update did: the task (None if deleted) and the tasks it made claimable."""

    task: Task | None
    unblocked: list[str] = field(default_factory=list)


RUNNER_CRASHES = "runnerCrashes"  # metadata: how often a runner died running the task (a retry clears it)
MAX_RUNNER_CRASHES = 2  # a task whose runner died running it this often fails instead


def released_metadata(meta: dict[str, Any], error: str = "", crash: str = "") -> dict[str, Any]:
    """A task's metadata as it is handed back from its owner: ``error`` (its turn failed) is
    recorded as ``lastError``, so the task waits for a retry by hand. ``crash`` (its runner
    died running it, and how) is counted; at :data:`MAX_RUNNER_CRASHES` it is the task's
    error too: a task that kills whoever runs it would otherwise go round the team taking
    each teammate down in turn."""
    meta = dict(meta)
    if crash:
        crashes = meta.get(RUNNER_CRASHES, 0)
        meta[RUNNER_CRASHES] = crashes = (crashes if isinstance(crashes, int) else 0) + 1
        if crashes >= MAX_RUNNER_CRASHES and not error:
            error = (
                f"its runner died running it {crashes} times (the last: {crash}); set it pending to retry it"
            )
    if error:
        meta["lastError"] = error[-2000:]
    return meta


def claim_prompt(task: Task) -> str:
    """Claude Code's auto-claim prompt, word for word, so a transcript reads the same."""
    prompt = f"Complete all open tasks. Start with task #{task.id}:\n\n {task.subject}"
    if task.description:
        prompt += f"\n\n{task.description}"
    return prompt


def claimable(tasks: builtins.list[Task]) -> Iterator[Task]:
    """The tasks of one listing a teammate could claim now: pending, unowned, not failed,
    every blocker completed (judged from the same listing, so nothing moves in between)."""
    open_ids = {t.id for t in tasks if t.status != "completed"}
    for task in tasks:
        if (
            task.status == "pending"
            and task.owner_name is None
            and not task.failed
            and not task.internal
            and not open_ids & set(task.blocked_by)
        ):
            yield task


MAX_METADATA_DEPTH = 16  # objects and arrays within each other: enough for any real use


def metadata_bytes(metadata: dict[str, Any]) -> int:
    """What ``metadata`` adds to its task's file, laid out as the file is (two-space indent,
    one level in); InvalidInput if it is not plain JSON or nested past the depth limit.
    (msgspec would write bytes as base64, NaN as null, a key 1 as "1" and a tuple as a list: a
    task that reads back other than it was given.)"""
    stack: list[tuple[Any, int]] = [(metadata, 1)]
    while stack:  # the depth first, without recursion: a deep one would blow the laying out up
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > MAX_METADATA_DEPTH:
                raise InvalidInput(f"task metadata is nested more than {MAX_METADATA_DEPTH} levels deep")
            if isinstance(value, dict):
                if not all(isinstance(key, str) for key in value):
                    raise InvalidInput('task metadata\'s keys must be strings, like {"reviewer": "ada"}')
                value = value.values()
            stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, float) and not math.isfinite(value):
            raise InvalidInput(f"task metadata must be plain JSON: {value} is not a JSON number")
        elif not isinstance(value, str | int | float | None):  # bool is an int
            raise InvalidInput(
                "task metadata must be plain JSON (objects, arrays, strings, numbers, true, false, "
                f"null), not Python's {type(value).__name__}"
            )
    try:
        return len(msgspec.json.format(msgspec.json.encode({"metadata": metadata}), indent=2))
    except (TypeError, ValueError, msgspec.EncodeError) as exc:  # an int past 4,300 digits, a lone surrogate
        raise InvalidInput(f"task metadata must be plain JSON: {exc}") from None


def check_metadata(metadata: Any, *, before: dict[str, Any] | None = None) -> None:
    """A task's metadata: a JSON object whose part of the task file is no bigger than a
    description may be (every look at the list reads each file whole). ``before``: what the
    task had; an update is refused only if it leaves more than that, past the limit."""
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise InvalidInput(f"task metadata must be a JSON object, not {type(metadata).__name__}")
    size = metadata_bytes(metadata)
    if size > MAX_DESCRIPTION_BYTES and (before is None or size > metadata_bytes(before)):
        which = "is" if before is None else "would be"
        raise InvalidInput(
            f"the task's metadata {which} {size} bytes in its file; the limit is {MAX_DESCRIPTION_BYTES}"
        )


def check_text(subject: Any, description: Any, active_form: Any = None) -> None:
    if not isinstance(subject, str) or not subject.strip():
        raise InvalidInput("a task needs a subject: a short imperative sentence like 'Count the words'")
    for name, value in (("subject", subject), ("description", description), ("activeForm", active_form)):
        if isinstance(value, str) and len(value.encode()) > MAX_DESCRIPTION_BYTES:
            raise InvalidInput(
                f"the task's {name} is {len(value.encode())} bytes; the limit is {MAX_DESCRIPTION_BYTES}"
            )
