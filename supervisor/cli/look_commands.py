"""The commands that look at a team without changing it: ``ps``, ``logs``, ``watch``, and the
table's views that have no other command (``members``, ``summary``, ``messages``,
``requests``, ``transcript``); and ``wait``, for the lead's next messages."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

import msgspec

from ipc import operations as io
from ipc.answers import Request
from ipc.errors import InvalidInput
from ipc.schemas import PermissionRequest
from supervisor.cli.output import emit, open_handle, open_team, row_budget, warn
from supervisor.client import operations as ops

FOLLOW_EVERY = 0.2  # s between looks at a followed log


def cmd_ps(args: argparse.Namespace) -> int:
    from supervisor.cli import ps_view
    from supervisor.client import ps

    rows = row_budget(args)
    snapshot = ps.snapshot(args.root, args.team, None if args.json else rows)
    for problem in snapshot.problems:
        warn(problem)
    emit(args, snapshot, lambda: ps_view.print_snapshot(snapshot, rows))
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    if args.lines < 0:
        raise InvalidInput(f"--lines {args.lines}: give 0 (all) or more")
    log = ops.read_log(open_team(args), io.ReadLog(name=args.name, lines=args.lines))
    emit(args, log, lambda: print(log.text, end=""))
    if args.name and not log.size and not args.json:  # a blank screen is no answer
        print(
            f"({args.name}'s log is empty: its process has printed nothing; "
            f"'agentteams transcript {args.team} {args.name}' shows its turns)",
            file=sys.stderr,
        )
    if not args.follow:
        return 0
    sys.stdout.flush()
    offset = log.size
    while True:  # as tail -f: the file only grows (a team deleted meanwhile ends it)
        try:
            with open(log.path, "rb") as f:
                f.seek(offset)
                chunk = f.read()
        except FileNotFoundError:
            return 0
        if chunk:
            offset += len(chunk)
            sys.stdout.write(chunk.decode(errors="replace"))
            sys.stdout.flush()
        time.sleep(FOLLOW_EVERY)


def cmd_watch(args: argparse.Namespace) -> int:
    from supervisor.cli import view

    team = open_team(args)
    if args.once or args.json:
        if args.json:
            print(json.dumps(msgspec.to_builtins(view.snapshot(team)), default=str))
        else:
            view.print_once(team, compact=args.compact, rows=row_budget(args))
        return 0
    view.live(team, compact=args.compact)
    return 0


# ---------------------------------------------------------------- the table's views


def add_parsers(cmd: Callable[..., argparse.ArgumentParser], sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    for name, help in (
        ("members", "a team's members (the lead first), with what its supervisor knows of each"),
        ("summary", "a team at a glance: members, task counts, waiting requests, whether it is up"),
        ("requests", "plan and permission requests waiting for the lead (approve or deny them)"),
    ):
        cmd(sub, name, help).add_argument("team")
    messages = cmd(sub, "messages", "every inbox's messages, oldest first (read flags untouched)")
    messages.add_argument("team")
    messages.add_argument("-n", "--limit", type=int, default=200, help="the latest N (0: all)")
    transcript = cmd(sub, "transcript", "an agent's conversation: its turns, tool calls and results")
    transcript.add_argument("team")
    transcript.add_argument("name", help="the agent (the lead: team-lead)")
    transcript.add_argument("-n", "--limit", type=int, default=200, help="the last N entries (0: all)")
    wait = cmd(sub, "wait", "wait for the lead's next messages (marked read), at most --timeout seconds")
    wait.add_argument("team")
    wait.add_argument("--timeout", type=float, default=30.0, help="seconds (at most 3600)")


def _member_line(m: io.MemberInfo) -> str:
    state = m.state or ("active" if m.active else "inactive" if m.active is False else "")
    return "\t".join(
        (m.name, state or "-", m.backend or "-", m.model or "-", f"task {m.task}" if m.task else "")
    ).rstrip()


def cmd_members(args: argparse.Namespace) -> int:
    found = ops.list_members(open_handle(args), io.NoInput())
    emit(args, found, "\n".join(_member_line(m) for m in found.members))
    return 0


def cmd_summary(args: argparse.Namespace) -> int:
    s = ops.team_status(open_handle(args), io.NoInput())
    up = f"up (supervisor pid {s.supervisor})" if s.up else "down"
    t = s.tasks
    emit(
        args,
        s,
        f"{s.team}: {up}; {len(s.members)} member(s); tasks: {t.pending} pending, {t.in_progress} in progress, "
        f"{t.completed} completed, {t.failed} failed; {s.pending_requests} request(s) waiting",
    )
    return 0


def _request_line(r: Request) -> str:
    if isinstance(r, PermissionRequest):
        return f"{r.request_id}\tpermission\t{r.agent_id}\t{r.tool_name}: {r.description}"
    return f"{r.request_id}\tplan\t{r.from_}\t{r.plan_file_path}"


def cmd_requests(args: argparse.Namespace) -> int:
    found = ops.list_requests(open_handle(args), io.NoInput())
    emit(args, found, "\n".join(_request_line(r) for r in found.requests) or "no requests waiting")
    return 0


def _event_line(e: io.Event) -> str:
    first = e.text.splitlines()[0] if e.text else ""
    return f"{e.timestamp} {e.from_}{f' [{e.summary}]' if e.summary else ''}: {first}"


def cmd_messages(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise InvalidInput(f"--limit {args.limit}: give 0 (all) or more")
    found = ops.team_messages(open_handle(args), io.MessageQuery(limit=args.limit))
    lines = [f"{' ' if m.read else '*'} → {m.to}: {_event_line(m.event)}" for m in found.messages]
    emit(args, found, "\n".join(lines) or "no messages")
    return 0


def cmd_transcript(args: argparse.Namespace) -> int:
    if args.limit < 0:
        raise InvalidInput(f"--limit {args.limit}: give 0 (all) or more")
    found = ops.read_transcript(open_handle(args), io.ReadTranscript(name=args.name, limit=args.limit))

    def show() -> None:
        for entry in found.entries:
            for part in entry.parts:
                said = part.text or (
                    json.dumps(part.input, ensure_ascii=False) if part.input is not None else ""
                )
                what = f"{part.type} {part.name}".strip()
                print(f"{entry.timestamp} {entry.role} {what}: {said.splitlines()[0] if said else ''}")

    emit(args, found, show)
    return 0


def cmd_wait(args: argparse.Namespace) -> int:
    if not 0 <= args.timeout <= 3600:
        raise InvalidInput(f"--timeout {args.timeout:g}: give 0 to 3600 seconds")
    team = open_handle(args)
    try:
        found = ops.wait_for_messages(team, io.WaitForMessages(timeout_s=args.timeout))
    finally:
        team.close()
    emit(
        args,
        found,
        "\n".join(_event_line(e) for e in found.events) or f"no messages within {args.timeout:g}s",
    )
    return 0


COMMANDS = {
    "members": cmd_members,
    "summary": cmd_summary,
    "requests": cmd_requests,
    "messages": cmd_messages,
    "transcript": cmd_transcript,
    "wait": cmd_wait,
}
