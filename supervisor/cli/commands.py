"""What each `agentteams` command does (the parser and error boundary are in
:mod:`supervisor.cli.main`)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any

import msgspec

from ipc import operations as io
from ipc import schemas, trust
from ipc.errors import Conflict, CorruptFile, InvalidInput, TransportError
from ipc.launch import SupervisorOptions
from ipc.options import TeammateOptions
from ipc.paths import TeamPaths, resolve_root
from ipc.readable import headline
from ipc.team_list import scan_teams
from supervisor.cli.arguments import json_value
from supervisor.cli.look_commands import cmd_logs, cmd_ps, cmd_watch
from supervisor.cli.output import emit, open_team, row_budget, warn
from supervisor.cli.send_commands import message_text
from supervisor.cli.usage_commands import budget_while_spawning, cmd_budget, cmd_usage, set_budget_from
from supervisor.client import busy, launcher, outsiders, readers
from supervisor.client import operations as ops
from supervisor.client.team import Team


def _renamed(name: str, normalised: str, kind: str) -> str:
    return (
        f" (from {name!r}: {kind} names keep only letters, digits, '-' and '_')" if normalised != name else ""
    )


# ---------------------------------------------------------------- teams


def cmd_team(args: argparse.Namespace) -> int:
    if args.team_command == "create":
        team = Team.create(args.name, root=args.root, description=args.description)
        config = team.config()
        engine = team.state.engine
        where = (
            f"in the engine at {engine.shown} (this root, {resolve_root(args.root)}, remembers it)"
            if engine is not None
            else f"in {resolve_root(args.root)}"
        )
        emit(args, config, f"created team {config.name} {where}" + _renamed(args.name, config.name, "team"))
    elif args.team_command == "delete":
        try:
            team = open_team(args, args.name)
        except CorruptFile as exc:  # a config torn for good: no command could read it, none remove it
            if not args.force:
                raise CorruptFile(
                    exc.path,
                    f"{exc.message.removeprefix(f'{exc.path}: ')}; "
                    f"'agentteams team delete {args.name} --force' removes the team as it is",
                ) from None
            team = Team(args.name, root=args.root)
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
    fields = {f: getattr(args, f) for f in SupervisorOptions.__struct_fields__}
    pid = team.supervisor_pid()
    if pid is not None:  # before the budget is touched: a refused command changes nothing
        if args.budget_tokens is not None or args.budget_usd is not None:
            hint = f"'agentteams budget {team.name}' changes a running team's budget"
        elif fields != msgspec.structs.asdict(SupervisorOptions()):
            hint = f"its options are set when it starts: 'agentteams down {team.name}' first"
        else:
            hint = f"'agentteams status {team.name}' shows it"
        raise Conflict(f"team {team.name!r} is already up (supervisor pid {pid}); {hint}")
    SupervisorOptions(**fields).checked()  # bad options (a malformed --agents): nothing changed
    team.check_host_name(args.host_name)
    set_budget_from(args, team)
    wake = fields.pop("wake")
    pid = team.up(wake=wake, host_name=args.host_name, **fields)
    # An MCP member is its client's process, not the supervisor's to start: not resumed; nor is
    # another host's teammate of a team on the engine (its own host's supervisor resumes it).
    here = team.host
    members = [
        m.name
        for m in team.config().teammates()
        if m.backend_type != outsiders.BACKEND and (not here or m.host_name == here)
    ]
    emit(
        args,
        {"team": team.name, "supervisor": pid, "resumed": members},
        f"team {team.name} is up (supervisor pid {pid})"
        + (f"; resumed {', '.join(members)}" if members else ""),
    )
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    try:
        team = Team(args.team, root=args.root)  # a team whose config is damaged can still be stopped
    except (TransportError, CorruptFile):  # its engine away, refusing us or its marker damaged:
        # what runs here stops all the same
        paths = TeamPaths(args.root, args.team)
        if launcher.supervisor_pid(paths) is None:
            raise
        launcher.stop(paths, args.grace, timeout=30.0)
        emit(args, {"team": paths.team, "stopped": True}, f"team {paths.team} is down here")
        return 0
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
    rows = row_budget(args)
    status = open_team(args).status()
    mates = status.teammates
    over = bool(rows) and len(mates) > rows
    shown, _ = busy.budget(busy.mates_first(mates) if over else mates, rows)
    # An in-process teammate's pid is a number of the supervisor's: say whose thread it is.
    lines = [
        f"{m.name}\t{m.state}\tpid {m.pid}\trestarts {m.restarts}"
        + (f"\thost {m.host_pid} thread {m.thread or '-'}" if m.host_pid is not None else "")
        for m in shown
    ]
    if over:
        rest = busy.mates_line(busy.mates_first(mates)[len(shown) :], more=True)
        lines = [busy.mates_line(mates), *lines, f"… {rest} (--rows 0 shows every one)"]
    emit(args, status, "\n".join(lines) or "no teammates")
    return 0


# ---------------------------------------------------------------- teammates


def cmd_spawn(args: argparse.Namespace) -> int:
    prompt = message_text(args.prompt)  # as lead and send read theirs: '-' and '@FILE'
    team = Team(args.team, root=args.root)
    options = TeammateOptions(
        name=args.name,
        prompt=prompt,
        model=args.model or ("claude-code" if args.backend == "claude-code" else "offline"),
        agent_type=args.agent_type,
        plan_mode_required=args.plan_mode_required,
        permission_mode=args.permission_mode,
        cwd=args.cwd,
        backend=args.backend,
        host=args.host,
        rename=args.rename,
        isolation=args.isolation,
        allowed_tools=args.allowed_tools,
        disallowed_tools=args.disallowed_tools,
        effort=args.effort,
    ).checked()
    team.store.read()  # NotFound, and then NotRunning, before a budget is written
    team.require_up_for(options.host)
    taken = team.member(options.name) is not None
    if not options.rename:
        team.store.check_new_member(options.name)
    # Its budget before its first request; a name taken gets one under its new name, after.
    with budget_while_spawning(args, team, None if taken else options.name):
        reply = ops.spawn_teammate(team, options)
    if reply.name != options.name:
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


def cmd_mode(args: argparse.Namespace) -> int:
    team = open_team(args)
    try:
        changed = ops.set_mode(team, io.SetMode(name=args.name, mode=args.mode))
    finally:
        team.close()
    emit(args, changed, f"{changed.name} is now in {changed.mode} mode")
    return 0


def cmd_background(args: argparse.Namespace) -> int:
    team = open_team(args)
    try:
        moved = ops.background_subagent(team, io.SubagentRef(subagent=args.subagent))
    finally:
        team.close()
    emit(args, moved, f"{moved.id} goes on in the background; {moved.parent} hears of its result")
    return 0


def add_permit_parser(cmd: Callable[..., argparse.ArgumentParser], sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    permit = cmd(
        sub,
        "permit",
        "add permission rules or directories to running teammates, for their session "
        "(Claude Code's team_permission_update)",
    )
    permit.add_argument("team")
    permit.add_argument("name", help="a teammate, or '*' for every teammate")
    permit.add_argument(
        "rules", nargs="*", help="Claude Code's rules, e.g. 'Bash(npm test:*)' 'Edit(src/**)'"
    )
    permit.add_argument("--behavior", choices=("allow", "deny", "ask"), default="allow")
    permit.add_argument(
        "--add-dir",
        dest="directories",
        action="append",
        default=[],
        help="a directory to add (relative to here)",
    )
    permit.add_argument(
        "--update",
        dest="updates",
        type=json_value,
        action="append",
        default=[],
        help='a permission update as JSON, e.g. \'{"type": "setMode", "mode": "plan", "destination": "session"}\'',
    )


def cmd_permit(args: argparse.Namespace) -> int:
    team = open_team(args)
    try:
        change = io.UpdatePermissions(
            name=args.name,
            rules=args.rules,
            behavior=args.behavior,
            # relative to where the command runs, as a person typing it means (blank stays blank: refused)
            directories=[os.path.abspath(d) if d.strip() else d for d in args.directories],
            updates=args.updates,
        )
        sent = ops.update_permissions(team, change)
    finally:
        team.close()
    said = [f"{change.behavior} {' '.join(change.rules)}"] if change.rules else []
    said += [f"directories {' '.join(change.directories)}"] if change.directories else []
    said += [u["type"] for u in change.updates]
    emit(args, sent, f"sent to {', '.join(sent.names)} for their session: {'; '.join(said)}")
    return 0


def cmd_restart(args: argparse.Namespace) -> int:
    reply = ops.restart_teammate(open_team(args), io.MemberRef(name=args.name))
    emit(args, reply, f"restarted {reply.name} (pid {reply.pid})")
    return 0


def cmd_shutdown(args: argparse.Namespace) -> int:
    request = io.ShutdownTeammate(name=args.name, force=args.force, grace=args.grace)
    reply = ops.shutdown_teammate(open_team(args), request)
    kept = (
        f"; its worktree has changes and is kept at {reply.worktree} ('agentteams diff {args.team} {reply.name}')"
        if reply.worktree
        else ""
    )
    said = f"{reply.name} has shut down and left the team" if reply.stopped else f"{reply.name}: {reply.exit}"
    emit(args, reply, f"{said}{kept}")
    return 0


# ---------------------------------------------------------------- messages


def cmd_push(args: argparse.Namespace) -> int:
    text = message_text(args.text)  # as send reads it; a file that cannot be read, before the team
    pushed = ops.push(open_team(args), io.Push(name=args.name, text=text))
    emit(args, pushed, f"pushed to {pushed.pushed}")
    return 0


def cmd_inbox(args: argparse.Namespace) -> int:
    request = io.ReadInbox(name=args.name, unread_only=args.unread, mark_read=False)
    team = open_team(args)
    messages = ops.read_inbox(team, request).messages
    verifier = readers.verifier(team.store, args.name)

    def show() -> None:
        for m in messages:
            flag = " " if m.read else "*"
            summary = f" [{m.summary_text}]" if m.summary_text else ""
            print(f"{flag} {m.timestamp} {m.from_}{summary} {_trust_mark(verifier, m)}: {headline(m)}")
        if not messages:
            print("no unread messages" if args.unread else "no messages")

    emit(args, messages, show)
    return 0


def _trust_mark(verifier: trust.Verifier, message: schemas.InboxMessage) -> str:
    """The entry's verdict as every door gives it (ipc.trust), with the reason it is forged."""
    check = verifier.verdict(message)
    if check.status == trust.VERIFIED:
        return "(verified)"
    if check.status == trust.FORGED:
        return f"(FORGED: {check.reason})"
    return "(unverified)"  # the word every door uses (a signature with no key to check it too)


def cmd_answer(args: argparse.Namespace) -> int:
    team = open_team(args)
    request = io.AnswerRequest(
        request_id=args.request_id,
        approve=args.command == "approve",
        feedback=args.feedback,
        updated_input=parse_input(getattr(args, "input", None)),
        permission_mode=getattr(args, "permission_mode", ""),
        always=getattr(args, "always", False),
        permission_updates=getattr(args, "updates", None),
    )
    try:
        answered = ops.answer_request(team, request)
    finally:
        team.close()
    verb = "approved" if answered.approved else "denied"
    emit(args, answered, f"{verb} {answered.request_id} from {answered.agent}")
    return 0


def parse_input(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"--input is not JSON ({exc}); give the tool input as a JSON object") from None
    if not isinstance(value, dict):
        raise InvalidInput("--input must be a JSON object, the tool's input")
    return value


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "team": cmd_team,
    "up": cmd_up,
    "resume": cmd_up,
    "down": cmd_down,
    "status": cmd_status,
    "spawn": cmd_spawn,
    "restart": cmd_restart,
    "mode": cmd_mode,
    "background": cmd_background,
    "permit": cmd_permit,
    "push": cmd_push,
    "shutdown": cmd_shutdown,
    "inbox": cmd_inbox,
    "ps": cmd_ps,
    "watch": cmd_watch,
    "logs": cmd_logs,
    "usage": cmd_usage,
    "budget": cmd_budget,
    "approve": cmd_answer,
    "deny": cmd_answer,
}
