"""The `agentteams` commands that run a job to its end: the demo, a scenario, a lead agent
(headless or in a chat), and the benchmarks. They clean up as Ctrl-C does when the terminal
closes or they are killed (see :mod:`supervisor.cli.main`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from ipc.errors import InvalidInput, NotFound, TaskFailed, Timeout
from ipc.paths import resolve_root
from ipc.replies import LeadResult
from ipc.schemas import LEAD_NAME
from supervisor.cli import exits
from supervisor.cli.output import emit, warn
from supervisor.cli.send_commands import message_text
from supervisor.client.lead_runner import LeadRun, check_lead
from supervisor.client.team import Team


def cmd_demo(args: argparse.Namespace) -> int:
    from supervisor.cli.demo import run_demo

    if not 1 <= args.teammates <= 16 or not 4 <= args.tasks <= 200:
        raise InvalidInput("use --teammates 1..16 and --tasks 4..200")
    root = resolve_root(args.root)
    with contextlib.ExitStack() as stack:
        dashboard = stack.enter_context(_dashboard(root, args.port)) if args.serve else None
        if not args.serve and not args.json:
            print(
                f"watch it in a browser: 'agentteams demo --serve', or 'agentteams serve --root {root}' beside it"
            )
        summary = run_demo(
            root,
            teammates=args.teammates,
            tasks=args.tasks,
            as_json=args.json,
            wake=args.wake,
            on_up=dashboard.on_up if dashboard else None,
        )
        if args.json:  # before the dashboard's wait: a script reads it as the run ends
            print(json.dumps(summary, default=str), flush=True)
        if dashboard is not None:
            dashboard.stay()
    ok = (
        summary["lead"]["stopped_by"] == "done"
        and summary["tasks_completed"] == summary["tasks_total"]
        and not summary["left_running"]
    )
    return 0 if ok else 1


class _Dashboard:
    """``agentteams serve`` beside the demo, for a person to watch the run and how it ended."""

    def __init__(self, server: subprocess.Popen[str]) -> None:
        self.server = server

    def on_up(self) -> None:
        """The team is up: wait for a person to open the page, when there is one at a terminal."""
        if sys.stdin.isatty():  # the prompt on stderr: stdout is the summary's (--json)
            print("open it, then press Enter to start the demo ", end="", file=sys.stderr, flush=True)
            sys.stdin.readline()
        else:
            print("no terminal to press Enter in: the demo starts now", file=sys.stderr, flush=True)

    def stay(self) -> None:
        """Serve until told to stop, with or without a terminal: the page of how the run ended
        is what --serve is for, and a script that started it stops it with a signal."""
        how = "Ctrl-C" if sys.stdin.isatty() else f"SIGTERM or SIGINT (kill {os.getpid()})"
        with contextlib.suppress(KeyboardInterrupt):
            print(f"the team stays for the page; {how} stops the dashboard", file=sys.stderr, flush=True)
            code = self.server.wait()
            print(f"agentteams: the dashboard stopped (exit {code})", file=sys.stderr)


@contextlib.contextmanager
def _dashboard(root: Path, port: int) -> Iterator[_Dashboard]:
    """The dashboard, serving once this is entered; stopped at the end."""
    server = subprocess.Popen(
        [sys.executable, "-m", "supervisor.cli", "serve", "--root", str(root), "--port", str(port), "--json"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if not line:
            raise InvalidInput(f"the dashboard did not start (port {port} taken? try --port 0)")
        url = json.loads(line)["url"]
        print(f"dashboard: {url}#team=demo", file=sys.stderr)
        yield _Dashboard(server)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def cmd_run(args: argparse.Namespace) -> int:
    from supervisor.cli import scenario as sc

    spec = sc.load(args.scenario)
    root = resolve_root(args.root)
    team = Team(spec.team.name, root=root)
    cwd = sc.workdir(spec, args.scenario, root, args.cwd)
    sc.check_agent_types(spec, cwd, str(args.scenario))
    before = 0
    if team.store.exists():
        if args.fresh:
            team.delete(force=True)
        else:
            before = sc.check_rerun(team, spec, str(args.scenario))
    cwd.mkdir(parents=True, exist_ok=True)
    if not team.store.exists():
        team = Team.create(spec.team.name, root=root, description=spec.team.description, cwd=str(cwd))
    started = time.monotonic()
    if not team.is_up():  # down with this command however it ends, unless it is to stay up
        team.up(wake=spec.team.wake, owner_pid=0 if args.keep_up else os.getpid())
    names: list[str] = []
    code, error = exits.OK, ""
    try:
        names = sc.spawn_all(team, spec, str(cwd))
        sc.create_tasks(team, spec)
        try:
            sc.wait_settled(team, spec.timeout, notice=warn)
        except TaskFailed as exc:
            code, error = exits.TASKS_FAILED, exc.message
        except Timeout as exc:
            code, error = exits.TIMEOUT, exc.message
        result = sc.report(team, names, started, cwd=cwd, before=before, error=error)
        if not args.keep_up and code == exits.OK:
            for name in names:
                team.shutdown(name, force=True, grace=5)
    finally:
        if not args.keep_up:
            team.down()
    earlier = f" ({before} of them by an earlier run)" if before else ""
    emit(
        args,
        result,
        f"{result.tasks_completed}/{result.tasks_total} tasks completed by {len(names)} teammate(s) in "
        f"{result.seconds} s{earlier}; working directory {cwd}",
    )
    if error:
        print(f"agentteams: error: {error}", file=sys.stderr)
    return code


def cmd_bench(args: argparse.Namespace) -> int:
    """The suites run as their own program from the source checkout: shipped code does not
    import them."""
    checkout = Path(__file__).resolve().parents[2]
    if not (checkout / "benchmarks" / "run.py").exists():
        raise NotFound(
            "the benchmarks live in the source checkout, not in an installed package; run 'make bench' there"
        )
    argv = [sys.executable, "-m", "benchmarks", args.suite]
    argv += ["--quick"] if args.quick else []
    argv += ["--out", str(args.out)] if args.out else []
    argv += ["--json"] if args.json else []
    argv += ["--max", str(args.max)] if args.max is not None else []
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(checkout), os.environ.get("PYTHONPATH")) if p),
    }
    return subprocess.run(argv, cwd=checkout, env=env).returncode


def _lead_team(args: argparse.Namespace) -> tuple[Team, str]:
    """The team to lead, and why the lead may not remove it at the end ("": it may): made
    here (working in the current directory) if it does not exist, as Claude Code makes a
    session's team, and then the lead's unless --keep. An existing team is never the lead's."""
    team = Team(args.team, root=args.root)
    cwd = getattr(args, "cwd", None)
    if team.store.exists():
        lead = team.member(LEAD_NAME)
        if cwd and (lead is None or Path(lead.cwd) != Path(cwd).expanduser().absolute()):
            raise InvalidInput(
                f"team {team.name!r} exists and works in {lead.cwd if lead else 'its own directory'}; "
                "--cwd applies to a team the lead makes"
            )
        return team, "it existed before the lead started"
    workdir = Path(cwd).expanduser().absolute() if cwd else Path.cwd()
    if workdir.exists() and not workdir.is_dir():
        raise InvalidInput(f"--cwd {cwd} is a file; give a directory")
    workdir.mkdir(parents=True, exist_ok=True)
    team = Team.create(args.team, root=args.root, description="led by agentteams lead", cwd=str(workdir))
    return team, "--keep was given" if args.keep else ""


def _lead_finished(args: argparse.Namespace, result: LeadResult) -> int:
    if args.json:
        print(json.dumps(msgspec.to_builtins(result), ensure_ascii=False))
    elif result.answer and args.command == "lead":
        print(result.answer)
    if result.stopped_by != "done":
        kept = (
            f"; the team is kept: 'agentteams task list {result.team}'"
            if result.kept and result.tasks
            else ""
        )
        print(f"agentteams: the lead stopped ({result.stopped_by}): {result.error}{kept}", file=sys.stderr)
    return exits.FOR_STOP[result.stopped_by]


def cmd_lead(args: argparse.Namespace) -> int:
    prompt = message_text(args.prompt)
    check_lead(
        prompt, args.model, args.timeout, interactive=False, agents=args.agents
    )  # before the team is made
    team, keep_reason = _lead_team(args)
    lead = LeadRun(
        team,
        prompt,
        model=args.model,
        timeout=args.timeout,
        interactive=False,
        verbose=args.verbose,
        owns_team=not keep_reason,
        keep_reason=keep_reason,
        permission_mode=args.permission_mode,
        fork_subagents=args.fork_subagents,
        effort=args.effort,
        agents=args.agents,
    )
    return _lead_finished(args, lead.wait())


def cmd_chat(args: argparse.Namespace) -> int:
    if not sys.stdin.isatty() and not args.allow_pipe:
        raise InvalidInput(
            "chat reads what you type from a terminal; to read a pipe add --allow-pipe, "
            "or hand a script's goal to 'agentteams lead'"
        )
    check_lead("", args.model, None, interactive=True, agents=args.agents)
    team, keep_reason = _lead_team(args)
    lead = LeadRun(
        team,
        "",
        model=args.model,
        timeout=None,
        interactive=True,
        verbose=True,
        owns_team=not keep_reason,
        keep_reason=keep_reason,
        permission_mode=args.permission_mode,
        fork_subagents=args.fork_subagents,
        effort=args.effort,
        agents=args.agents,
    )
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
