"""The commands about where teammates run: ``diff`` (what an isolated teammate changed in
its worktree) and ``attach`` (open the tmux session or pane a teammate runs in)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from typing import Any

from ipc import operations as io
from ipc import tmux
from ipc.errors import InvalidInput, NotFound
from supervisor.cli.output import emit, open_team
from supervisor.client import operations as ops


def add_parsers(cmd: Callable[..., argparse.ArgumentParser], sub: Any) -> None:
    diff = cmd(sub, "diff", "what a teammate changed in its own worktree (spawned with --isolation worktree)")
    diff.add_argument("team")
    diff.add_argument("name")
    diff.add_argument("--stat", action="store_true", help="only the changed files and the commit count")
    attach = cmd(sub, "attach", "open the tmux session (or a teammate's pane) a team's tmux teammates run in")
    attach.add_argument("team")
    attach.add_argument(
        "name", nargs="?", default="", help="the teammate whose pane to show (default: the first)"
    )


def cmd_diff(args: argparse.Namespace) -> int:
    result = ops.diff(open_team(args), io.MemberRef(name=args.name))

    def show() -> None:
        print(f"# {result.name}: {result.path} (branch {result.branch}, from {result.base[:12]})")
        print(f"# {len(result.changed)} file(s) changed, {result.commits} commit(s)")
        for name in result.changed:
            print(f"#   {name}")
        if not args.stat and result.diff:
            print(result.diff, end="" if result.diff.endswith("\n") else "\n")

    emit(args, result, show)
    return 0


def cmd_attach(args: argparse.Namespace) -> int:
    """Inside the same tmux server: switch to the pane. Otherwise attach this terminal to
    the session (``exec tmux attach``: detaching comes back here)."""
    team = open_team(args)
    panes = {m.name: m.tmux_pane_id for m in team.config().teammates() if m.tmux_pane_id.startswith("%")}
    if not panes:
        raise NotFound(
            f"no teammate of team {team.name!r} runs in a tmux pane now; "
            f"spawn one with --backend tmux (or 'agentteams up {team.name} --teammate-mode tmux')"
        )
    if args.name and args.name not in panes:
        team.store.require_member(args.name)  # a stranger's name is said to be one
        raise NotFound(f"{args.name!r} does not run in a tmux pane; in panes: {', '.join(panes)}")
    pane = panes[args.name] if args.name else next(iter(panes.values()))
    runtime = team.paths.existing_runtime_dir()
    server_file = tmux.socket_file(runtime) if runtime is not None else None
    server = server_file.read_text().strip() if server_file is not None and server_file.exists() else ""
    mux = tmux.Tmux(server)
    if not mux.pane_exists(pane):
        raise NotFound(
            f"pane {pane} of team {team.name!r} is gone (is the team up? 'agentteams ps {team.name}')"
        )
    mux.run("select-window", "-t", pane)
    mux.run("select-pane", "-t", pane)
    mine = os.environ.get("TMUX", "").split(",")[0]
    if mine and (not server or os.path.realpath(mine) == os.path.realpath(server)):
        mux.run("switch-client", "-t", pane)
        return 0
    if mine:
        raise InvalidInput(
            f"the team's panes are on another tmux server ({server}); run this outside tmux, "
            f"or in a new window: tmux -S {server} attach"
        )
    command = mux.argv("attach-session", "-t", pane)
    if not sys.stdin.isatty():
        raise InvalidInput(
            f"attach needs a terminal to show the session in; run it in one (or '{shlex.join(command)}')"
        )
    sys.stdout.flush()
    os.execvp("tmux", command)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"diff": cmd_diff, "attach": cmd_attach}
