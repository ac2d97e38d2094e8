"""The MCP tools: a view of the table of operations (:mod:`supervisor.client.operations`).

Each tool is one operation: its input schema from the input Struct, its output schema from
the output Struct, its description from the operation's docstring. A call decodes the
arguments into the input Struct, runs the operation as the session's actor (a member, or
the lead side), and returns the output as structured content (``msgspec.to_builtins``)
with a short text for models. Errors of the one hierarchy become tool errors carrying the
same one-line message the command line prints; nothing has changed then.

Operations block (file locks, the supervisor's socket), so they run in worker threads, one
at a time: the handle's sockets are used by one thread at a time. ``wait_for_messages``
runs beside them (it touches only files and its bell) and reports progress while it
waits, so a client does not time it out.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import anyio
import mcp_types as types
import msgspec

from ipc import operations as io
from ipc import trace, trust
from ipc.errors import AgentTeamsError, internal_error_line
from ipc.input_words import convert
from ipc.readable import event_of, looked_at
from ipc.schemas import LEAD_NAME, InboxMessage, Task
from ipc.task_rules import ClaimResult
from ipc.worktrees import WorktreeDiff
from supervisor.client import readers
from supervisor.client.handle import TeamHandle
from supervisor.client.operations import TABLE, Operation

# The tools, by the names clients call them (the table's names).
MEMBER_TOOLS = (
    "team_status",
    "list_members",
    "send_message",
    "read_inbox",
    "wait_for_messages",
    "task_create",
    "task_list",
    "task_get",
    "task_claim",
    "task_update",
    "answer_request",
)
LEAD_TOOLS = (
    *MEMBER_TOOLS[:-1],
    "task_delete",
    "team_messages",
    "spawn_teammate",
    "shutdown_teammate",
    "restart_teammate",
    "push",
    "answer_request",
    "list_requests",
    "set_mode",
    "update_permissions",
    "background_subagent",
    "diff",
    "read_log",
    "read_transcript",
    "usage",
    "ps",
)
log = logging.getLogger("agentteams.mcp")
TRACE_KEY = "agentteams/returned_ns"
PROGRESS_EVERY = 5.0  # seconds between progress notifications while a wait goes on
MAX_TEXT = 4000


def _words(text: str) -> str:
    return " ".join(text.split())


def tool_of(op: Operation[Any, Any]) -> types.Tool:
    return types.Tool(
        name=op.name,
        description=_words(op.doc),
        input_schema=io.schema(op.input),
        output_schema=io.schema(op.output),
        annotations=types.ToolAnnotations(read_only_hint=not op.writes),
    )


def error(message: str) -> types.CallToolResult:
    """A tool error: the one-line message, as the command line prints it."""
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


# ---------------------------------------------------------------- text for models


def _message_line(message: InboxMessage, verifier: trust.Verifier | None) -> str:
    """An inbox entry as a look shows it, with its verdict (what its reader would refuse:
    forged), as GET /messages and the page give it."""
    return _event_line(event_of(message) if verifier is None else looked_at(message, verifier))


def _event_line(event: io.Event) -> str:
    about = f" ({event.summary})" if event.summary else ""
    mark = f" [{event.trust}]" if event.trust in (trust.UNVERIFIED, trust.FORGED, "refused") else ""
    return f"From {event.from_}{mark}{about} at {event.timestamp}:\n{event.text}"


def _task_line(task: Task) -> str:
    owner = f", owner {task.owner_name}" if task.owner_name else ""
    blocked = f", blocked by {', '.join(task.blocked_by)}" if task.blocked_by else ""
    return f"#{task.id} [{task.status}{owner}{blocked}] {task.subject}"


def text_of(
    name: str, result: msgspec.Struct, args: msgspec.Struct, verifier: trust.Verifier | None = None
) -> str:
    """A short text for models: the messages themselves where they are the point, each
    marked unverified or forged (``verifier``: the inbox reader's), else a line and the
    result as JSON (the structured content, for clients that show only text)."""
    if isinstance(result, io.Events):
        if not result.events:
            return f"No messages within {getattr(args, 'timeout_s', 0):g}s."
        return "\n\n".join(_event_line(e) for e in result.events)
    if isinstance(result, io.Messages):
        if not result.messages:
            return "No messages."
        return "\n\n".join(_message_line(m, verifier) for m in result.messages)
    if isinstance(result, io.TaskList):
        return "\n".join(_task_line(t) for t in result.tasks) or "No tasks."
    if isinstance(result, io.TeamMessages):
        lines = [f"To {m.to}{'' if m.read else ' (unread)'}: {_event_line(m.event)}" for m in result.messages]
        return _cut("\n\n".join(lines) or "No messages.")
    if isinstance(result, io.Log):
        return _cut(result.text or "The log is empty.", keep_end=True)
    if isinstance(result, WorktreeDiff):
        changed = ", ".join(result.changed) or "nothing"
        return _cut(
            f"{result.name} changed {changed} ({result.commits} commit(s) on {result.branch})\n{result.diff}"
        )
    line = ""
    if isinstance(result, io.Sent):
        line = result.message
    elif isinstance(result, ClaimResult) and isinstance(result.task, Task):
        line = f"Claimed task {_task_line(result.task)}"
    elif isinstance(result, Task) and name == "task_create":
        line = f"Created task {_task_line(result)}"
    body = msgspec.json.encode(result).decode()
    return _cut(f"{line}\n{body}" if line else body)


def _cut(text: str, *, keep_end: bool = False) -> str:
    """At most MAX_TEXT characters: the start, or for a log the end (the structured content
    has it all)."""
    if len(text) <= MAX_TEXT:
        return text
    if keep_end:
        return "(earlier lines in the result) …" + text[-(MAX_TEXT - 40) :]
    return text[: MAX_TEXT - 20] + "… (see the result)"


# ---------------------------------------------------------------- calls


class Door:
    """One MCP session's view of one team: who acts (``member``, or the lead side), which
    tools it offers, and the call of one tool."""

    def __init__(self, team: TeamHandle, member: str | None = None) -> None:
        self.team = team
        self.actor = member or LEAD_NAME
        names = MEMBER_TOOLS if member else LEAD_TOOLS
        self.ops: dict[str, Operation[Any, Any]] = {n: TABLE[n] for n in dict.fromkeys(names)}
        self.tools = [tool_of(op) for op in self.ops.values()]
        self._one_at_a_time: anyio.CapacityLimiter | None = None

    def limiter(self) -> anyio.CapacityLimiter:
        if self._one_at_a_time is None:  # made inside the event loop that uses it
            self._one_at_a_time = anyio.CapacityLimiter(1)
        return self._one_at_a_time

    async def run_sync(self, work: Any, *args: Any) -> Any:
        """``work(*args)`` in a worker thread, after every other call of this session."""
        return await anyio.to_thread.run_sync(work, *args, limiter=self.limiter())

    async def call(self, name: str, arguments: dict[str, Any], progress: Any = None) -> types.CallToolResult:
        op = self.ops.get(name)
        if op is None:
            lead_side = name in TABLE and self.actor != LEAD_NAME
            why = (
                " for a member (the lead side has it: 'agentteams mcp TEAM' without --as)"
                if lead_side
                else ""
            )
            return error(f"no tool {name!r}{why}; tools: {', '.join(self.ops)}")
        try:
            args = convert(name, arguments, op.input)
            if name == "wait_for_messages":
                result = await self._wait(op, args, progress)
            else:
                result = await self.run_sync(op, self.team, args, self.actor)
        except AgentTeamsError as exc:
            return error(exc.message)
        except Exception as exc:  # a bug of ours: one line for the client, the traceback in our log
            log.exception("tool %s failed", name)
            return error(internal_error_line(exc))
        # When tracing, when the operation returned (CLOCK_MONOTONIC, one clock for every
        # process): the benchmarks split the time between the team's path and the transport.
        meta = {TRACE_KEY: time.monotonic_ns()} if trace.enabled() else None
        data = msgspec.to_builtins(result)
        return types.CallToolResult(
            content=[types.TextContent(text=text_of(name, result, args, self._verifier(result, args)))],
            structured_content=data if isinstance(data, dict) else {"result": data},
            _meta=meta,
        )

    def _verifier(self, result: msgspec.Struct, args: msgspec.Struct) -> trust.Verifier | None:
        """The verdicts a look at an inbox is shown with: as its owner would check them."""
        if not isinstance(result, io.Messages):
            return None
        return readers.verifier(self.team.store, getattr(args, "name", "") or self.actor)

    async def _wait(self, op: Operation[Any, Any], args: io.WaitForMessages, progress: Any) -> io.Events:
        """The wait in its own thread, with progress every few seconds. If the call is
        cancelled (the client gave up or went away) after messages were taken, they are put
        back unread: a message is never marked read for nobody."""
        bell = await self.run_sync(self.team.bell, self.actor)
        cancel = threading.Event()
        guard = threading.Lock()
        done: list[io.Events] = []

        def work() -> io.Events:
            with bell.cancellable(cancel):
                result: io.Events = op(self.team, args, self.actor)
            with guard:
                if cancel.is_set():
                    self._put_back(result)
                else:
                    done.append(result)
            return result

        async def report() -> None:
            waited = 0.0
            while True:
                await anyio.sleep(PROGRESS_EVERY)
                waited += PROGRESS_EVERY
                await progress(waited, args.timeout_s, f"waiting for messages ({waited:g}s)")

        try:
            async with anyio.create_task_group() as tg:
                if progress is not None:
                    tg.start_soon(report)
                result: io.Events = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
                tg.cancel_scope.cancel()
            return result
        except anyio.get_cancelled_exc_class():
            with guard:
                bell.cancel(cancel)
                taken = done[:]
            with anyio.CancelScope(shield=True):
                for result in taken:
                    await self.run_sync(self._put_back, result)
            raise

    def _put_back(self, result: io.Events) -> None:
        box = self.team.inbox(self.actor)
        for message in _as_messages(result):
            box.append_message(message)


def _as_messages(result: io.Events) -> list[InboxMessage]:
    """The messages behind the events, unread again."""
    return [
        InboxMessage(
            from_=e.from_,
            text=e.text if e.body is None else json.dumps(e.body, separators=(",", ":"), ensure_ascii=False),
            timestamp=e.timestamp,
            summary=e.summary or msgspec.UNSET,
            color=e.color or msgspec.UNSET,
        )
        for e in result.events
    ]
