"""The commands about where teammates run: ``diff`` (what an isolated teammate changed in
its worktree) and ``attach`` (open the tmux session or pane a teammate runs in)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ipc import operations as io
from supervisor.cli.output import emit, open_team
from supervisor.client import operations as ops


def add_parsers(cmd: Callable[..., argparse.ArgumentParser], sub: Any) -> None:
    diff = cmd(sub, "diff", "what a teammate changed in its own worktree (spawned with --isolation worktree)")
    diff.add_argument("team")
    diff.add_argument("name")
    diff.add_argument("--stat", action="store_true", help="only the changed files and the commit count")


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


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"diff": cmd_diff}
