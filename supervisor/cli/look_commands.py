"""The commands that look at a team without changing it: ``ps``, ``logs`` and ``watch``."""

from __future__ import annotations

import argparse
import json
import sys
import time

import msgspec

from ipc import operations as io
from ipc.errors import InvalidInput
from supervisor.cli.output import emit, open_team, row_budget, warn
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
