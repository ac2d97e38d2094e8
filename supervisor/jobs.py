"""The `agentteams` commands that run a job to its end: the demo, a scenario, a lead agent
(headless or in a chat), and the benchmarks. They clean up as Ctrl-C does when the terminal
closes or they are killed (see :mod:`supervisor.cli`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from ipc.errors import InvalidInput, NotFound
from ipc.launch import LeadResult
from ipc.paths import resolve_root
from supervisor.commands import message_text
from supervisor.lead_runner import LeadProcess, check_lead
from supervisor.output import emit, warn
from supervisor.team import Team

LONG_RUNNING = frozenset({"demo", "run", "watch", "lead", "chat"})


def cmd_demo(args: argparse.Namespace) -> int:
    from supervisor.demo import run_demo

    if not 1 <= args.teammates <= 16 or not 4 <= args.tasks <= 200:
        raise InvalidInput("use --teammates 1..16 and --tasks 4..200")
    summary = run_demo(
        resolve_root(args.root), teammates=args.teammates, tasks=args.tasks, as_json=args.json, wake=args.wake
    )
    if args.json:
        print(json.dumps(summary, default=str))
    ok = (
        summary["lead"]["stopped_by"] == "done"
        and summary["tasks_completed"] == summary["tasks_total"]
        and not summary["left_running"]
    )
    return 0 if ok else 1


def cmd_run(args: argparse.Namespace) -> int:
    from supervisor import scenario as sc

    spec = sc.load(args.scenario)
    team = Team(spec.team.name, root=args.root)
    if team.store.exists() and args.fresh:
        team.delete(force=True)
    if not team.store.exists():
        team = Team.create(spec.team.name, root=args.root, description=spec.team.description)
    started = time.monotonic()
    if not team.is_up():
        team.up(wake=spec.team.wake)
    names: list[str] = []
    try:
        names = sc.spawn_all(team, spec, str(Path.cwd()))
        sc.create_tasks(team, spec)
        sc.wait_settled(team, spec.timeout, notice=warn)
        result = sc.report(team, names, started)
        if not args.keep_up:
            for name in names:
                team.shutdown(name, force=True, grace=5)
    finally:
        if not args.keep_up:
            team.down()
    emit(
        args,
        result,
        f"{result.tasks_completed}/{result.tasks_total} tasks completed by {len(names)} teammate(s) in {result.seconds} s",
    )
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    checkout = Path(__file__).resolve().parents[1]
    if not (checkout / "benchmarks" / "run.py").exists():
        raise NotFound(
            "the benchmarks live in the source checkout, not in an installed package; run 'make bench' there"
        )
    if str(checkout) not in sys.path:
        sys.path.insert(0, str(checkout))
    from benchmarks.run import main as bench_main

    code: int = bench_main(
        args.suite, quick=args.quick, out=args.out or checkout / "benchmarks" / "results", as_json=args.json
    )
    return code


def _lead_team(args: argparse.Namespace) -> Team:
    """The team to lead; made here (working in the current directory) if it does not exist,
    as Claude Code makes a session's team."""
    team = Team(args.team, root=args.root)
    if not team.store.exists():
        team = Team.create(args.team, root=args.root, description="led by agentteams lead", cwd=os.getcwd())
    return team


def _lead_finished(args: argparse.Namespace, result: LeadResult) -> int:
    if args.json:
        print(json.dumps(msgspec.to_builtins(result), ensure_ascii=False))
    elif result.answer and args.command == "lead":
        print(result.answer)
    if result.stopped_by == "done":
        return 0
    print(f"agentteams: the lead stopped ({result.stopped_by}): {result.error}", file=sys.stderr)
    return 1


def cmd_lead(args: argparse.Namespace) -> int:
    prompt = message_text(args.prompt)
    check_lead(prompt, args.model, args.timeout, interactive=False)  # before the team is made
    team = _lead_team(args)
    lead = LeadProcess(
        team, prompt, model=args.model, timeout=args.timeout, interactive=False, verbose=args.verbose
    )
    return _lead_finished(args, lead.wait())


def cmd_chat(args: argparse.Namespace) -> int:
    if not sys.stdin.isatty() and not args.allow_pipe:
        raise InvalidInput(
            "chat reads what you type from a terminal; for a goal in a script use 'agentteams lead'"
        )
    check_lead("", args.model, None, interactive=True)
    team = _lead_team(args)
    lead = LeadProcess(team, "", model=args.model, timeout=None, interactive=True, verbose=True)
    print(
        f"Talking to the lead of team {team.name!r} (model {args.model}). Give it a goal; teammates' messages "
        "appear as they arrive. /exit or Ctrl-D ends the chat.",
        file=sys.stderr,
    )
    return _lead_finished(args, lead.wait())


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": cmd_demo,
    "run": cmd_run,
    "bench": cmd_bench,
    "lead": cmd_lead,
    "chat": cmd_chat,
}
