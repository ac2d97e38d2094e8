"""``send`` and ``task``: the commands scripts call in loops, one process each. Light to
import on purpose (see :mod:`supervisor.cli.homes`): the table of operations, the team's
handle and what printing a result takes, nothing else."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from ipc import operations as io
from ipc.errors import InvalidInput
from ipc.schemas import Task
from supervisor.cli.output import emit, open_handle, row_budget, warn
from supervisor.cli.parsers import created_line, task_metadata
from supervisor.client import busy
from supervisor.client import operations as ops


def message_text(value: str) -> str:
    if value == "-":
        try:
            return sys.stdin.read()
        except UnicodeDecodeError as exc:
            raise InvalidInput(
                f"cannot read the message from standard input: it is not UTF-8 text ({exc.reason} at byte {exc.start})"
            ) from None
    if value.startswith("@") and len(value) > 1:
        path = Path(value[1:])
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(
                f"cannot read the message from {path}: {getattr(exc, 'strerror', None) or exc}"
            ) from None
    return value


def cmd_send(args: argparse.Namespace) -> int:
    team = open_handle(args)
    request = io.SendMessage(to=args.recipient, text=message_text(args.text), summary=args.summary)
    try:
        sent = ops.send_message(team, request, args.sender)
    finally:
        team.close()  # the wake goes out before we exit
    emit(args, sent, sent.message)
    return 0


# ---------------------------------------------------------------- tasks


def cmd_task(args: argparse.Namespace) -> int:
    team = open_handle(args)
    c = args.task_command
    try:
        if c == "create":
            request = io.TaskCreate(
                subject=args.subject,
                description=args.description,
                blocked_by=args.blocked_by,
                metadata=task_metadata(args),
                active_form=args.active_form,
                owner=args.owner,
            )
            task = ops.task_create(team, request)
            emit(args, task, created_line(task.id, task.subject))
        elif c == "get":
            task = ops.task_get(team, io.TaskRef(id=args.id))
            emit(args, task, task_text(task))
        elif c == "update":
            update = io.TaskUpdate(
                id=args.id,
                status=args.status,
                subject=args.subject,
                description=args.description,
                owner=args.owner,
                add_blocks=args.add_blocks,
                add_blocked_by=args.add_blocked_by,
                remove_blocks=args.remove_blocks,
                remove_blocked_by=args.remove_blocked_by,
                metadata=task_metadata(args, update=True),
            )
            changed = ops.task_update(team, update)
            emit(
                args,
                changed.task or {"deleted": update.id},
                f"updated task #{update.id}" if changed.task else f"deleted task #{update.id}",
            )
        elif c == "list":
            rows = row_budget(args)
            listed = ops.task_list(team, io.TaskQuery(include_internal=args.all)).tasks
            for problem in team.tasks.problems:
                warn(problem)

            def show() -> None:
                over = bool(rows) and len(listed) > rows
                if over:
                    print(busy.tasks_line(listed))
                shown, hidden = busy.budget(busy.tasks_first(listed) if over else listed, rows)
                for t in shown:
                    blocked = f"\t(blocked by {', '.join(t.blocked_by)})" if t.blocked_by else ""
                    print(f"#{t.id}\t{busy.task_state(t)}\t{t.owner_name or '-'}\t{t.subject}{blocked}")
                if hidden:
                    rest = busy.tasks_line(busy.tasks_first(listed)[len(shown) :], more=True)
                    print(f"… {rest} (--rows 0 shows every task)")
                if not listed:
                    print("no tasks")

            emit(args, listed, show)
        elif c == "claim":
            claim = io.TaskClaim(id=args.id, agent=args.agent, check_busy=args.check_busy)
            result = ops.task_claim(team, claim)
            emit(args, result, f"{args.agent} claimed task #{claim.id}")
        elif c == "delete":
            deleted = ops.task_delete(team, io.TaskRef(id=args.id)).deleted
            emit(args, {"deleted": deleted}, f"deleted task #{deleted}")
    finally:
        team.close()
    return 0


def task_text(task: Task) -> str:
    """A task as a person reads it (``--json`` gives the file's fields)."""
    state = f"failed ({str(task.meta['lastError']).strip().splitlines()[0]})" if task.failed else task.status
    lines = [f"#{task.id} {task.subject}", f"status: {state}   owner: {task.owner_name or '-'}"]
    if task.blocked_by or task.blocks:
        waits = ", ".join(f"#{t}" for t in task.blocked_by) or "nothing"
        holds = ", ".join(f"#{t}" for t in task.blocks) or "nothing"
        lines.append(f"blocked by: {waits}   blocks: {holds}")
    meta = {k: v for k, v in task.meta.items() if k != "lastError"}
    if "command" in meta:
        lines.append(f"command: {meta.pop('command')}")
    if meta:
        lines.append(
            "metadata: " + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in meta.items())
        )
    if task.description:
        lines.append("")
        lines.append(task.description)
    return "\n".join(lines)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"send": cmd_send, "task": cmd_task}
