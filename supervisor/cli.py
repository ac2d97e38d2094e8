"""The `agentteams` command line (SPEC §9). Every command takes --root and --json, exits 0 on
success, and on failure prints one line on stderr and exits non-zero, changing nothing."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import msgspec

from ipc import messaging
from ipc.config import TeamConfigStore, list_teams
from ipc.errors import AgentTeamsError, InvalidInput, NotFound
from ipc.paths import resolve_root
from ipc.schemas import LEAD_NAME, PERMISSION_MODES
from supervisor.team import Team

EXIT_ERROR = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage block: scripts read the last line of stderr.
        self.exit(EXIT_USAGE, f"agentteams: error: {message} (see '{self.prog} --help')\n")


def _common() -> _Parser:
    common = _Parser(add_help=False)
    common.add_argument("--root", default=None, help="state root (default: $AGENTTEAMS_HOME or ~/.agentteams)")
    common.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    p = _Parser(prog="agentteams", description="A local runtime for teams of AI agents.", parents=[common])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, parents=[common])

    demo = cmd("demo", "run the demo pipeline on offline teammates")
    demo.add_argument("--teammates", type=int, default=4)
    demo.add_argument("--tasks", type=int, default=20)
    demo.add_argument("--wake", choices=("zmq", "poll"), default="zmq")

    run = cmd("run", "run a scenario described in TOML")
    run.add_argument("scenario", type=Path)
    run.add_argument("--keep-up", action="store_true", help="leave the team running afterwards")

    team = cmd("team", "create, delete or list teams")
    team_sub = team.add_subparsers(dest="team_command", required=True, parser_class=_Parser)
    tc = team_sub.add_parser("create", parents=[common])
    tc.add_argument("name")
    tc.add_argument("--description", default="")
    td = team_sub.add_parser("delete", parents=[common])
    td.add_argument("name")
    td.add_argument("--force", action="store_true")
    team_sub.add_parser("list", parents=[common])

    for name, help in (("up", "start a team's supervisor"), ("resume", "restart a team from disk")):
        up = cmd(name, help)
        up.add_argument("team")
        up.add_argument("--wake", choices=("zmq", "poll"), default="zmq")
        up.add_argument("--fallback-poll", type=float, default=5.0)
        up.add_argument("--restart", choices=("never", "on-failure"), default="on-failure")
        up.add_argument("--plan-approval", choices=("auto", "lead", "human"), default="auto",
                        help="who approves plans: auto (as Claude Code), an offline lead, or a person")
        up.add_argument("--lead-permission-mode", choices=PERMISSION_MODES, default="acceptEdits",
                        help="the mode an approved plan hands the teammate")
    down = cmd("down", "stop a team's teammates and supervisor")
    down.add_argument("team")
    down.add_argument("--grace", type=float, default=5.0)
    status = cmd("status", "the supervisor's view of a team")
    status.add_argument("team")

    spawn = cmd("spawn", "start a teammate")
    spawn.add_argument("team")
    spawn.add_argument("name")
    spawn.add_argument("--prompt", required=True)
    spawn.add_argument("--model", default="offline")
    spawn.add_argument("--agent-type", default="general-purpose")
    spawn.add_argument("--plan-mode-required", action="store_true")
    spawn.add_argument("--permission-mode", choices=PERMISSION_MODES, default=None)
    spawn.add_argument("--cwd", default=None)
    restart = cmd("restart", "start a failed or exited teammate again")
    restart.add_argument("team")
    restart.add_argument("name")

    send = cmd("send", "send a message (RECIPIENT '*' broadcasts)")
    send.add_argument("team")
    send.add_argument("recipient")
    send.add_argument("text")
    send.add_argument("--summary", required=True)
    send.add_argument("--from", dest="sender", default=LEAD_NAME)

    shutdown = cmd("shutdown", "ask a teammate to shut down")
    shutdown.add_argument("team")
    shutdown.add_argument("name")
    shutdown.add_argument("--force", action="store_true")
    shutdown.add_argument("--grace", type=float, default=10.0)

    inbox = cmd("inbox", "show an agent's inbox")
    inbox.add_argument("team")
    inbox.add_argument("name")
    inbox.add_argument("--unread", action="store_true")

    task = cmd("task", "create, get, update, list, claim or delete tasks")
    task_sub = task.add_subparsers(dest="task_command", required=True, parser_class=_Parser)
    t_create = task_sub.add_parser("create", parents=[common])
    t_create.add_argument("team")
    t_create.add_argument("subject")
    t_create.add_argument("--description", default="")
    t_create.add_argument("--command", dest="shell", default=None, help="shell command an offline teammate runs")
    t_create.add_argument("--blocked-by", nargs="*", default=[])
    t_create.add_argument("--active-form", default=None)
    t_get = task_sub.add_parser("get", parents=[common])
    t_get.add_argument("team")
    t_get.add_argument("id")
    t_update = task_sub.add_parser("update", parents=[common])
    t_update.add_argument("team")
    t_update.add_argument("id")
    t_update.add_argument("--status", choices=("pending", "in_progress", "completed", "deleted"))
    t_update.add_argument("--subject")
    t_update.add_argument("--description")
    t_update.add_argument("--owner")
    t_update.add_argument("--add-blocks", nargs="*")
    t_update.add_argument("--add-blocked-by", nargs="*")
    t_list = task_sub.add_parser("list", parents=[common])
    t_list.add_argument("team")
    t_claim = task_sub.add_parser("claim", parents=[common])
    t_claim.add_argument("team")
    t_claim.add_argument("id")
    t_claim.add_argument("agent")
    t_claim.add_argument("--check-busy", action="store_true")
    t_delete = task_sub.add_parser("delete", parents=[common])
    t_delete.add_argument("team")
    t_delete.add_argument("id")

    for verb in ("approve", "deny"):
        answer = cmd(verb, f"{verb} a teammate's plan or permission request")
        answer.add_argument("team")
        answer.add_argument("request_id")
        answer.add_argument("--feedback", default="")
        if verb == "approve":
            answer.add_argument("--input", default=None, help="JSON: the tool input to use instead (permission requests)")
            answer.add_argument("--permission-mode", choices=PERMISSION_MODES, default="acceptEdits")

    ps = cmd("ps", "the live process tree")
    ps.add_argument("team", nargs="?")
    watch = cmd("watch", "a live view of a team")
    watch.add_argument("team")
    watch.add_argument("--once", action="store_true", help="print one frame and exit")

    bench = cmd("bench", "run the benchmark suite")
    bench.add_argument("suite", nargs="?", default="all", choices=("latency", "exchange", "contention", "growth", "spawn", "idle", "all"))
    bench.add_argument("--quick", action="store_true")
    bench.add_argument("--out", type=Path, default=None)
    return p


# ---------------------------------------------------------------- helpers


def _out(args: argparse.Namespace, data: Any, text: str | Callable[[], None]) -> None:
    if args.json:
        print(json.dumps(msgspec.to_builtins(data), ensure_ascii=False))
    elif callable(text):
        text()
    else:
        print(text)


def _team(args: argparse.Namespace, name: str | None = None) -> Team:
    return Team.open(name or args.team, root=args.root)


def _require_member(team: Team, name: str) -> None:
    if name != LEAD_NAME:
        team.store.require_member(name)


# ---------------------------------------------------------------- commands


def cmd_team(args: argparse.Namespace) -> int:
    if args.team_command == "create":
        config = TeamConfigStore(args.root, args.name).create(args.description)
        _out(args, config, f"created team {config.name} in {resolve_root(args.root)}")
    elif args.team_command == "delete":
        team = _team(args, args.name)
        team.delete(force=args.force)
        _out(args, {"deleted": team.name}, f"deleted team {team.name}")
    else:
        teams = list_teams(args.root)
        _out(args, teams, "\n".join(f"{t.name}\t{len(t.teammates())} teammate(s)\t{t.description}" for t in teams) or "no teams")
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    team = _team(args)
    pid = team.up(wake=args.wake, fallback_poll=args.fallback_poll, restart=args.restart,
                  plan_approval=args.plan_approval, lead_permission_mode=args.lead_permission_mode)
    members = [m.name for m in team.config().teammates()]
    _out(args, {"team": team.name, "supervisor": pid, "resumed": members},
         f"team {team.name} is up (supervisor pid {pid})" + (f"; resumed {', '.join(members)}" if members else ""))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    team = _team(args)
    was_up = team.is_up()
    team.down(grace=args.grace)
    _out(args, {"team": team.name, "stopped": was_up}, f"team {team.name} is down" if was_up else f"team {team.name} was not up")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    status = _team(args).status()
    _out(args, status, "\n".join(f"{m['name']}\t{m['state']}\tpid {m['pid']}\trestarts {m['restarts']}" for m in status["teammates"]) or "no teammates")
    return 0


def cmd_spawn(args: argparse.Namespace) -> int:
    team = _team(args)
    name = team.spawn(args.name, prompt=args.prompt, model=args.model, agent_type=args.agent_type,
                      plan_mode_required=args.plan_mode_required, permission_mode=args.permission_mode or "", cwd=args.cwd)
    member = team.store.require_member(name)
    _out(args, member, f"spawned {name} ({member.color}, {member.tmux_pane_id})")
    return 0


def cmd_restart(args: argparse.Namespace) -> int:
    result = _team(args).restart(args.name)
    _out(args, result, f"restarted {result['name']} (pid {result['pid']})")
    return 0


def cmd_send(args: argparse.Namespace) -> int:
    team = _team(args)
    _require_member(team, args.sender)
    if args.recipient == "*":
        response = team.broadcast(args.text, args.summary, sender=args.sender)
    else:
        response = team.send(args.recipient, args.text, args.summary, sender=args.sender)
    _out(args, response, response["message"])
    return 0


def cmd_shutdown(args: argparse.Namespace) -> int:
    result = _team(args).shutdown(messaging.clean_recipient(args.name), force=args.force, grace=args.grace)
    _out(args, result, f"{result['name']} has shut down")
    return 0


def cmd_inbox(args: argparse.Namespace) -> int:
    team = _team(args)
    _require_member(team, args.name)
    box = team.inbox(args.name)
    messages = box.unread() if args.unread else box.read()

    def show() -> None:
        for m in messages:
            flag = " " if m.read else "*"
            summary = f" [{m.summary}]" if isinstance(m.summary, str) else ""
            print(f"{flag} {m.timestamp} {m.from_}{summary}: {m.text}")
        if not messages:
            print("no unread messages" if args.unread else "no messages")

    _out(args, messages, show)
    return 0


def cmd_task(args: argparse.Namespace) -> int:
    team = _team(args)
    tasks = team.tasks
    c = args.task_command
    if c == "create":
        metadata = {"command": args.shell} if args.shell else None
        for blocker in args.blocked_by:
            tasks.get(blocker)  # refuse before creating anything
        task = tasks.create(args.subject, args.description, active_form=args.active_form, metadata=metadata)
        if args.blocked_by:
            task = tasks.update(task.id, add_blocked_by=args.blocked_by) or task
        team.wake("*")
        _out(args, task, f"created task #{task.id}: {task.subject}")
    elif c == "get":
        task = tasks.get(args.id)
        _out(args, task, json.dumps(msgspec.to_builtins(task), indent=2, ensure_ascii=False))
    elif c == "update":
        updated = tasks.update(args.id, status=args.status, subject=args.subject, description=args.description,
                               owner=args.owner, add_blocks=args.add_blocks, add_blocked_by=args.add_blocked_by)
        if updated is not None and updated.owner_name:
            team.wake(updated.owner_name)
        team.wake("*")
        _out(args, updated or {"deleted": args.id}, f"updated task #{args.id}" if updated else f"deleted task #{args.id}")
    elif c == "list":
        listed = tasks.list()
        for problem in tasks.problems:
            print(f"agentteams: warning: {problem}", file=sys.stderr)
        _out(args, listed, "\n".join(
            f"#{t.id}\t{t.status}\t{t.owner_name or '-'}\t{t.subject}" + (f"\t(blocked by {', '.join(t.blocked_by)})" if t.blocked_by else "")
            for t in listed) or "no tasks")
    elif c == "claim":
        _require_member(team, args.agent)
        result = tasks.claim(args.id, args.agent, check_agent_busy=args.check_busy)
        if not result.success:
            raise InvalidInput(f"cannot claim task #{args.id} for {args.agent}: {result.reason}")
        _out(args, result, f"{args.agent} claimed task #{args.id}")
    elif c == "delete":
        tasks.delete(args.id)
        _out(args, {"deleted": args.id}, f"deleted task #{args.id}")
    return 0


def cmd_answer(args: argparse.Namespace) -> int:
    from supervisor.approvals import parse_input

    team = _team(args)
    if args.command == "approve":
        result = team.approve(args.request_id, feedback=args.feedback, updated_input=parse_input(args.input),
                              permission_mode=args.permission_mode)
    else:
        result = team.deny(args.request_id, feedback=args.feedback)
    _out(args, result, f"{'approved' if result['approved'] else 'denied'} {result['request_id']} from {result['agent']}")
    return 0


def cmd_ps(args: argparse.Namespace) -> int:
    from supervisor import ps

    if args.team:
        trees = [ps.team_tree(_team(args))]
    else:
        trees = [ps.team_tree(Team(t.name, args.root)) for t in list_teams(args.root)]
    claude = ps.claude_code_processes(args.root, args.team)

    def show() -> None:
        for tree in trees:
            ps.print_tree(tree)
        for proc in claude:
            print(f"claude-code {proc['agent_id']}\tpid {proc['pid']}\t{'member' if proc['member'] else 'not in config'}")
        if not trees and not claude:
            print("no teams")

    _out(args, {"teams": trees, "claude_code": claude}, show)
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.live import Live

    from supervisor.view import render

    team = _team(args)
    if args.once or args.json:
        if args.json:
            from supervisor.view import snapshot

            print(json.dumps(msgspec.to_builtins(snapshot(team)), default=str))
        else:
            Console().print(render(team))
        return 0
    with Live(render(team), refresh_per_second=4, screen=False) as live:
        try:
            while True:
                time.sleep(0.25)
                live.update(render(team))
        except KeyboardInterrupt:
            pass
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from supervisor.demo import run_demo

    if not 1 <= args.teammates <= 16 or not 4 <= args.tasks <= 200:
        raise InvalidInput("use --teammates 1..16 and --tasks 4..200")
    summary = run_demo(resolve_root(args.root), teammates=args.teammates, tasks=args.tasks, as_json=args.json, wake=args.wake)
    if args.json:
        print(json.dumps(summary, default=str))
    ok = summary["tasks_completed"] == summary["tasks_total"] and not summary["left_running"]
    return 0 if ok else EXIT_ERROR


def cmd_run(args: argparse.Namespace) -> int:
    from supervisor import scenario as sc

    spec = sc.load(args.scenario)
    store = TeamConfigStore(args.root, spec.team.name)
    if store.exists():
        raise InvalidInput(f"team {store.team!r} already exists; delete it ('agentteams team delete {store.team} --force') or rename the scenario's team")
    started = time.monotonic()
    team = Team.create(spec.team.name, root=args.root, description=spec.team.description)
    team.up(wake=spec.team.wake)
    try:
        names = sc.spawn_all(team, spec, str(Path.cwd()))
        ids = sc.create_tasks(team, spec)
        team.wake("*")
        if ids:
            sc.wait_settled(team, spec.timeout)
        tasks = team.tasks.list()
        result: dict[str, Any] = {
            "team": team.name,
            "teammates": names,
            "tasks_total": len(tasks),
            "tasks_completed": sum(1 for t in tasks if t.status == "completed"),
            "tasks_failed": [t.id for t in tasks if t.status != "completed"],
            "seconds": round(time.monotonic() - started, 2),
        }
        if not args.keep_up:
            for name in names:
                team.shutdown(name, force=True, grace=5)
    finally:
        if not args.keep_up:
            team.down()
    _out(args, result, f"{result['tasks_completed']}/{result['tasks_total']} tasks completed by {len(names)} teammate(s) in {result['seconds']} s"
         + (f"; failed: {', '.join(result['tasks_failed'])}" if result["tasks_failed"] else ""))
    return 0 if not result["tasks_failed"] else EXIT_ERROR


def cmd_bench(args: argparse.Namespace) -> int:
    try:
        from benchmarks.run import main as bench_main
    except ImportError as exc:
        raise NotFound(f"the benchmarks are not installed ({exc}); run from a source checkout with 'make bench'") from None
    code: int = bench_main(args.suite, quick=args.quick, out=args.out, as_json=args.json)
    return code


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "team": cmd_team, "up": cmd_up, "resume": cmd_up, "down": cmd_down, "status": cmd_status,
    "spawn": cmd_spawn, "restart": cmd_restart, "send": cmd_send, "shutdown": cmd_shutdown,
    "inbox": cmd_inbox, "task": cmd_task, "ps": cmd_ps, "watch": cmd_watch, "demo": cmd_demo,
    "run": cmd_run, "bench": cmd_bench, "approve": cmd_answer, "deny": cmd_answer,
}


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in ("demo", "run"):
        signal.signal(signal.SIGTERM, _interrupt)  # so their 'finally: team.down()' runs
    try:
        return COMMANDS[args.command](args)
    except AgentTeamsError as exc:
        print(f"agentteams: error: {exc.message}", file=sys.stderr)
        return EXIT_ERROR
    except TimeoutError as exc:
        print(f"agentteams: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("agentteams: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # never a traceback to a user
        print(f"agentteams: internal error: {type(exc).__name__}: {exc} (please report this)", file=sys.stderr)
        return 70


if __name__ == "__main__":
    sys.exit(main())
