"""What each `agentteams` command does (the parser and error boundary are in
:mod:`supervisor.cli`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec

from ipc.config import TeamConfigStore, scan_teams
from ipc.errors import Conflict, InvalidInput
from ipc.launch import SupervisorOptions, TeammateOptions
from ipc.paths import resolve_root
from ipc.schemas import LEAD_NAME
from supervisor.output import emit, open_team, warn
from supervisor.team import Team
from supervisor.usage_commands import cmd_budget, cmd_usage, set_budget_from


def _require_member(team: Team, name: str) -> None:
    if name != LEAD_NAME:
        team.store.require_member(name)


def _task_id(value: str) -> str:
    if not value.isdigit() or len(value) > 12:
        raise InvalidInput(f"task id {value!r} is not a task number like '7'")
    return value


def _renamed(name: str, normalised: str, kind: str) -> str:
    return (
        f" (from {name!r}: {kind} names keep only letters, digits, '-' and '_')" if normalised != name else ""
    )


# ---------------------------------------------------------------- teams


def cmd_team(args: argparse.Namespace) -> int:
    if args.team_command == "create":
        config = TeamConfigStore(args.root, args.name).create(args.description)
        emit(
            args,
            config,
            f"created team {config.name} in {resolve_root(args.root)}"
            + _renamed(args.name, config.name, "team"),
        )
    elif args.team_command == "delete":
        team = open_team(args, args.name)
        team.delete(force=args.force)
        emit(args, {"deleted": team.name}, f"deleted team {team.name}")
    else:
        teams, problems = scan_teams(args.root)
        for problem in problems:
            warn(problem)
        emit(
            args,
            teams,
            "\n".join(f"{t.name}\t{len(t.teammates())} teammate(s)\t{t.description_text}" for t in teams)
            or "no teams",
        )
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    team = open_team(args)
    if team.is_up():  # before the budget is touched: a refused command changes nothing
        raise Conflict(
            f"team {team.name!r} is already up; 'agentteams budget {team.name}' changes a running team's budget"
        )
    set_budget_from(args, team)
    fields = {f: getattr(args, f) for f in SupervisorOptions.__struct_fields__}
    wake = fields.pop("wake")
    pid = team.up(wake=wake, **fields)
    members = [m.name for m in team.config().teammates()]
    emit(
        args,
        {"team": team.name, "supervisor": pid, "resumed": members},
        f"team {team.name} is up (supervisor pid {pid})"
        + (f"; resumed {', '.join(members)}" if members else ""),
    )
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    team = Team(args.team, root=args.root)  # a team whose config is damaged can still be stopped
    if not team.store.exists() and not team.is_up():
        team.store.read()  # NotFound
    was_up = team.is_up()
    team.down(grace=args.grace)
    emit(
        args,
        {"team": team.name, "stopped": was_up},
        f"team {team.name} is down; 'agentteams up {team.name}' brings its members back"
        if was_up
        else f"team {team.name} was not up",
    )
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    status = open_team(args).status()
    emit(
        args,
        status,
        "\n".join(f"{m.name}\t{m.state}\tpid {m.pid}\trestarts {m.restarts}" for m in status.teammates)
        or "no teammates",
    )
    return 0


# ---------------------------------------------------------------- teammates


def cmd_spawn(args: argparse.Namespace) -> int:
    team = Team(args.team, root=args.root)
    options = TeammateOptions(
        name=args.name,
        prompt=args.prompt,
        model=args.model or ("claude-code" if args.backend == "claude-code" else "offline"),
        agent_type=args.agent_type,
        plan_mode_required=args.plan_mode_required,
        permission_mode=args.permission_mode,
        cwd=args.cwd,
        backend=args.backend,
    ).checked()
    if not team.is_up():
        team.store.read()
    set_budget_from(args, team, options.name)  # before its first request
    reply = team.start_teammate(options)
    if reply.renamed_from:
        set_budget_from(args, team, reply.name)
    note = f"; {options.name!r} was taken, so it is {reply.name}" if reply.renamed_from else ""
    emit(
        args,
        reply,
        f"spawned {reply.name} ({reply.color}, pid {reply.pid})"
        + note
        + _renamed(args.name, options.name, "agent"),
    )
    return 0


def cmd_restart(args: argparse.Namespace) -> int:
    reply = open_team(args).restart(args.name)
    emit(args, reply, f"restarted {reply.name} (pid {reply.pid})")
    return 0


def cmd_shutdown(args: argparse.Namespace) -> int:
    from ipc.messaging import clean_recipient

    reply = open_team(args).shutdown(clean_recipient(args.name), force=args.force, grace=args.grace)
    emit(args, reply, f"{reply.name} has shut down and left the team")
    return 0


# ---------------------------------------------------------------- messages


def message_text(value: str) -> str:
    if value == "-":
        return sys.stdin.read()
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
    team = open_team(args)
    _require_member(team, args.sender)
    text = message_text(args.text)
    try:
        if args.recipient == "*":
            response = team.broadcast(text, args.summary, sender=args.sender)
        else:
            response = team.send(args.recipient, text, args.summary, sender=args.sender)
    finally:
        team.close()  # the wake goes out before we exit
    emit(args, response, response["message"])
    return 0


def cmd_push(args: argparse.Namespace) -> int:
    open_team(args).push(args.name, args.text)
    emit(args, {"pushed": args.name}, f"pushed to {args.name}")
    return 0


def cmd_inbox(args: argparse.Namespace) -> int:
    team = open_team(args)
    _require_member(team, args.name)
    box = team.inbox(args.name)
    messages = box.unread() if args.unread else box.read()

    def show() -> None:
        for m in messages:
            flag = " " if m.read else "*"
            summary = f" [{m.summary_text}]" if m.summary_text else ""
            print(f"{flag} {m.timestamp} {m.from_}{summary}: {m.text}")
        if not messages:
            print("no unread messages" if args.unread else "no messages")

    emit(args, messages, show)
    return 0


# ---------------------------------------------------------------- tasks


def cmd_task(args: argparse.Namespace) -> int:
    team = open_team(args)
    tasks = team.tasks
    c = args.task_command
    try:
        if c == "create":
            metadata = {"command": args.shell} if args.shell else None
            blockers = [_task_id(b) for b in args.blocked_by]
            for blocker in blockers:
                tasks.get(blocker)  # refuse before creating anything
            task = tasks.create(
                args.subject,
                args.description,
                active_form=args.active_form,
                metadata=metadata,
                blocked_by=blockers,
            )
            emit(args, task, f"created task #{task.id}: {task.subject}")
        elif c == "get":
            task = tasks.get(_task_id(args.id))
            emit(args, task, json.dumps(msgspec.to_builtins(task), indent=2, ensure_ascii=False))
        elif c == "update":
            change = tasks.change(
                _task_id(args.id),
                status=args.status,
                subject=args.subject,
                description=args.description,
                owner=args.owner,
                add_blocks=args.add_blocks,
                add_blocked_by=args.add_blocked_by,
            )
            if change.task is not None and change.task.owner_name:
                team.wake(change.task.owner_name)
            emit(
                args,
                change.task or {"deleted": args.id},
                f"updated task #{args.id}" if change.task else f"deleted task #{args.id}",
            )
        elif c == "list":
            listed = tasks.list(include_internal=args.all)
            for problem in tasks.problems:
                warn(problem)

            def show() -> None:
                for t in listed:
                    state = "failed" if t.failed else t.status
                    blocked = f"\t(blocked by {', '.join(t.blocked_by)})" if t.blocked_by else ""
                    print(f"#{t.id}\t{state}\t{t.owner_name or '-'}\t{t.subject}{blocked}")
                if not listed:
                    print("no tasks")

            emit(args, listed, show)
        elif c == "claim":
            _require_member(team, args.agent)
            result = tasks.claim(_task_id(args.id), args.agent, check_agent_busy=args.check_busy)
            if not result.success:
                raise InvalidInput(f"cannot claim task #{args.id} for {args.agent}: {result.reason}")
            emit(args, result, f"{args.agent} claimed task #{args.id}")
        elif c == "delete":
            tasks.delete(_task_id(args.id))
            emit(args, {"deleted": args.id}, f"deleted task #{args.id}")
    finally:
        team.close()
    return 0


def cmd_answer(args: argparse.Namespace) -> int:
    from supervisor.approvals import parse_input

    team = open_team(args)
    try:
        if args.command == "approve":
            result = team.approve(
                args.request_id,
                feedback=args.feedback,
                updated_input=parse_input(args.input),
                permission_mode=args.permission_mode,
            )
        else:
            result = team.deny(args.request_id, feedback=args.feedback)
    finally:
        team.close()
    emit(
        args,
        result,
        f"{'approved' if result['approved'] else 'denied'} {result['request_id']} from {result['agent']}",
    )
    return 0


# ---------------------------------------------------------------- seeing


def cmd_ps(args: argparse.Namespace) -> int:
    from supervisor import ps

    snapshot = ps.snapshot(args.root, args.team)
    for problem in snapshot.problems:
        warn(problem)
    emit(args, snapshot, lambda: ps.print_snapshot(snapshot))
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    from supervisor import view

    team = open_team(args)
    if args.once or args.json:
        if args.json:
            print(json.dumps(msgspec.to_builtins(view.snapshot(team)), default=str))
        else:
            view.print_once(team)
        return 0
    view.live(team)
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "team": cmd_team,
    "up": cmd_up,
    "resume": cmd_up,
    "down": cmd_down,
    "status": cmd_status,
    "spawn": cmd_spawn,
    "restart": cmd_restart,
    "send": cmd_send,
    "push": cmd_push,
    "shutdown": cmd_shutdown,
    "inbox": cmd_inbox,
    "task": cmd_task,
    "ps": cmd_ps,
    "watch": cmd_watch,
    "usage": cmd_usage,
    "budget": cmd_budget,
    "approve": cmd_answer,
    "deny": cmd_answer,
}
