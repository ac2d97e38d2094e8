"""The `agentteams` command line: the parser and the error boundary.

Every command takes ``--root`` and ``--json`` before or after the subcommand, exits 0 on
success, and on failure prints one line on stderr and exits non-zero, changing nothing.
Each command runs from the module :data:`supervisor.cli.homes.HOMES` names, imported alone.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
from pathlib import Path

from ipc.errors import AgentTeamsError, InvalidInput, internal_error_line
from ipc.launch import SupervisorOptions
from ipc.model_specs import EFFORTS
from ipc.options import PERMISSION_MODES
from supervisor.cli import arguments, exits, parsers
from supervisor.cli.arguments import budget_arguments, struct_arguments
from supervisor.cli.homes import HOMES, LONG_RUNNING, QUICK_EXIT, VIEWS, command_of, exit_now
from supervisor.cli.parsers import Parser, rows_option

EFFORT_HELP = (
    "the effort its model requests ask for (the API's output_config.effort; default: the model's own)"
)
MODE_HELP = "the lead's permission mode, which the teammates it spawns inherit (default: acceptEdits)"
UPDATE = "a permission request: a permission update the teammate keeps, as JSON (given again: another)"

LEAD_HELP = """\
the goal, for the offline lead (the default model): numbered steps, one per line, each
with its blockers and a command (both optional), and how many teammates:

  Teammates: 2
  1. Fetch the data: `echo data > raw.txt`
  2. Count it [after 1]: `wc -c raw.txt`
  3. Check it [after 2] [subagent]: `test -s raw.txt`

(a step marked [subagent] is handed by its teammate to a subagent), or a line
'Plan file: plan.md' naming a file that lists them; examples/goal.md is one.
A Claude model (--model sonnet) reads any goal. A goal with no steps carries on with the
team's open tasks (a retry after a failure).

the team: one that exists is worked in and left in place, with its members; one that
does not exist is made here (or in --cwd) and removed at the end if every task completed,
unless --keep.

exit status: 0 every task completed, 1 error, 3 a task failed or tasks were left open,
4 --timeout, 5 a budget ran out, 130 interrupted (Ctrl-C)."""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser, or with ``only`` just that command's (the others are left
    unbuilt): building all of them costs more than a quick command's work, and imports the
    modules of commands that do not run. ``agentteams --help`` still lists them all."""

    def want(*names: str) -> bool:
        return only is None or only in names

    p, sub, cmd = parsers.skeleton(only)

    demo = cmd(sub, "demo", "run the demo pipeline on offline teammates")
    demo.add_argument("--teammates", type=int, default=4)
    demo.add_argument("--tasks", type=int, default=20)
    demo.add_argument("--wake", choices=("zmq", "poll"), default="zmq")
    demo.add_argument(
        "--serve",
        action="store_true",
        help="also serve the dashboard: open its URL, then the demo starts (at once without a terminal); "
        "the team stays for the page until Ctrl-C or SIGTERM",
    )
    demo.add_argument("--port", type=int, default=8765, help="the dashboard's port with --serve")

    run = cmd(sub, "run", "run a scenario described in TOML")
    run.add_argument("scenario", type=Path)
    run.add_argument("--keep-up", action="store_true", help="leave the team running afterwards")
    run.add_argument(
        "--fresh", action="store_true", help="delete the scenario's team first if it exists (to run it again)"
    )
    run.add_argument(
        "--cwd",
        default=None,
        help="where the commands run (default: the scenario's team.cwd, else ROOT/work/TEAM)",
    )

    lead = cmd(sub, "lead", "hand a team a goal: a lead agent runs until the team's work is done", LEAD_HELP)
    lead.add_argument("team")
    lead.add_argument(
        "--prompt", required=True, help="the goal ('-' reads it from stdin, '@FILE' from a file)"
    )
    lead.add_argument("--model", default="offline", help="offline, sonnet, opus, haiku or anthropic:MODEL")
    lead.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="stop after this many seconds of the lead's work, counted from the lead agent's start "
        "(once the team is made and its supervisor is up); stopping the team comes after",
    )
    lead.add_argument("--verbose", action="store_true", help="show what arrives and what the lead says")
    lead.add_argument(
        "--keep", action="store_true", help="keep the team even if the lead made it and all went well"
    )
    lead.add_argument("--cwd", default=None, help="where a team the lead makes works (default: here)")
    lead.add_argument("--permission-mode", choices=PERMISSION_MODES, default="", help=MODE_HELP)
    lead.add_argument("--fork-subagents", action="store_true", help=SupervisorOptions.HELP["fork_subagents"])
    arguments.agents_option(lead)
    lead.add_argument("--effort", choices=EFFORTS, default="", help=EFFORT_HELP)
    chat = cmd(sub, "chat", "talk to a team's lead agent in the terminal")
    chat.add_argument("team")
    chat.add_argument("--model", default="offline", help="offline, sonnet, opus, haiku or anthropic:MODEL")
    chat.add_argument("--keep", action="store_true", help="keep the team even if the chat made it")
    chat.add_argument("--permission-mode", choices=PERMISSION_MODES, default="", help=MODE_HELP)
    chat.add_argument("--fork-subagents", action="store_true", help=SupervisorOptions.HELP["fork_subagents"])
    arguments.agents_option(chat)
    chat.add_argument("--effort", choices=EFFORTS, default="", help=EFFORT_HELP)
    chat.add_argument(
        "--allow-pipe",
        action="store_true",
        help="read what is typed from a pipe, not a terminal (for scripts and tests)",
    )

    team = cmd(sub, "team", "create, delete or list teams")
    team_sub = team.add_subparsers(dest="team_command", required=True, parser_class=Parser)
    tc = cmd(team_sub, "create", "create a team")
    tc.add_argument("name")
    tc.add_argument("--description", default="")
    td = cmd(team_sub, "delete", "delete a team (it is brought down first)")
    td.add_argument("name")
    td.add_argument("--force", action="store_true", help="also when teammates remain")
    cmd(team_sub, "list", "list teams")

    for name, help in (
        ("up", "start a team's supervisor; its members come back"),
        ("resume", "the same as up"),
    ):
        up = cmd(sub, name, help)
        up.add_argument("team")
        up.add_argument("--host-name", default="", help="this host's name in a team on the engine")
        struct_arguments(up, SupervisorOptions, SupervisorOptions.HELP)
        budget_arguments(up, "the team")
    down = cmd(sub, "down", "stop a team's teammates and supervisor (they stay members)")
    down.add_argument("team")
    down.add_argument("--grace", type=float, default=5.0)
    status = cmd(sub, "status", "the supervisor's view of a team")
    status.add_argument("team")
    rows_option(status, "teammates")

    spawn = cmd(sub, "spawn", "start a teammate")
    spawn.add_argument("team")
    spawn.add_argument("name")
    spawn.add_argument(
        "--prompt", required=True, help="its goal ('-' reads it from stdin, '@FILE' from a file)"
    )
    spawn.add_argument(
        "--model",
        default=None,
        help="offline (default), anthropic:MODEL, sonnet/opus/haiku, claude-code[:MODEL]",
    )
    spawn.add_argument("--agent-type", default="general-purpose")
    spawn.add_argument("--plan-mode-required", action="store_true")
    spawn.add_argument("--permission-mode", choices=PERMISSION_MODES, default="")
    spawn.add_argument("--cwd", default="")
    spawn.add_argument(
        "--backend",
        choices=("process", "claude-code", "tmux", "in-process"),
        default="",
        help="how it runs (default: the team's --teammate-mode, process unless told)",
    )
    spawn.add_argument("--host", default="", help="the host to run it on, in a team on the engine")
    spawn.add_argument("--rename", action="store_true", help="if the name is taken, use NAME-2, NAME-3…")
    spawn.add_argument(
        "--isolation",
        choices=("none", "worktree"),
        default="none",
        help="worktree: its own git worktree of the team's cwd, on branch agentteams/TEAM/NAME",
    )
    spawn.add_argument(
        "--allowed-tools", default="", help="Claude Code's rules it may use unasked, e.g. 'Bash(git:*) Edit'"
    )
    spawn.add_argument(
        "--disallowed-tools",
        default="",
        help="tools it does without, and rules it is denied, e.g. 'Write Bash(rm:*)'",
    )
    spawn.add_argument(
        "--effort",
        choices=EFFORTS,
        default="",
        help="the effort its requests ask for (default: its definition's, else the model's own)",
    )
    budget_arguments(spawn, "this teammate")
    if want("diff", "attach"):
        from supervisor.cli import backend_commands

        backend_commands.add_parsers(cmd, sub)
    usage = cmd(sub, "usage", "tokens and cost of a team's model calls, per agent and model")
    usage.add_argument("team")
    budget = cmd(
        sub, "budget", "show or set a team's (or a teammate's) budget; agents check it before each request"
    )
    budget.add_argument("team")
    budget.add_argument("--teammate", default=None, help="set this teammate's budget, not the team's")
    budget_arguments(budget, "the team (or --teammate)")
    mode = cmd(sub, "mode", "set a teammate's permission mode (now, and when it is started again)")
    mode.add_argument("team")
    mode.add_argument("name")
    mode.add_argument("mode", choices=PERMISSION_MODES)
    background = cmd(sub, "background", "move a running synchronous subagent to the background")
    background.add_argument("team")
    background.add_argument("subagent", help="its id (sub-...), as ps shows it")
    if want("permit"):
        from supervisor.cli import commands

        commands.add_permit_parser(cmd, sub)
    restart = cmd(sub, "restart", "start a failed or exited teammate again")
    restart.add_argument("team")
    restart.add_argument("name")

    parsers.add_send(cmd, sub)
    push = cmd(sub, "push", "an in-memory message a running teammate takes before anything else")
    push.add_argument("team")
    push.add_argument("name")
    push.add_argument("text", help="the text; '-' reads standard input, '@FILE' reads a file")

    shutdown = cmd(sub, "shutdown", "ask a teammate to shut down; it leaves the team")
    shutdown.add_argument("team")
    shutdown.add_argument("name")
    shutdown.add_argument("--force", action="store_true")
    shutdown.add_argument("--grace", type=float, default=10.0)

    inbox = cmd(sub, "inbox", "show an agent's inbox")
    inbox.add_argument("team")
    inbox.add_argument("name", type=parsers.named)
    inbox.add_argument("--unread", action="store_true")

    parsers.add_task(cmd, sub)

    for verb in ("approve", "deny"):
        answer = cmd(sub, verb, f"{verb} a teammate's plan or permission request")
        answer.add_argument("team")
        answer.add_argument("request_id")
        answer.add_argument("--feedback", default="")
        if verb == "approve":
            answer.add_argument(
                "--input", default=None, help="JSON: the tool input to use instead (permission requests)"
            )
            answer.add_argument(
                "--permission-mode",
                choices=PERMISSION_MODES,
                default="",
                help="a plan's: the mode the teammate goes on in (default acceptEdits)",
            )
            answer.add_argument(
                "--update", dest="updates", type=arguments.json_value, action="append", help=UPDATE
            )
            answer.add_argument(
                "--always",
                action="store_true",
                help="a permission request: also apply its suggestions, so that calls like it stop asking",
            )

    if want("mcp"):
        from supervisor.mcp import command as mcp_command

        mcp_command.add_arguments(cmd(sub, "mcp", mcp_command.HELP))
    if want("serve"):
        from supervisor.web import command as web_command

        web_command.add_arguments(cmd(sub, "serve", web_command.HELP))

    logs = cmd(sub, "logs", "the supervisor's log, or a teammate's (what its process printed)")
    logs.add_argument("team")
    logs.add_argument("name", nargs="?", default="", help="a teammate (default: the supervisor)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing what is added (Ctrl-C ends)")
    logs.add_argument("-n", "--lines", type=int, default=200, help="lines from the end (0: all)")

    ps = cmd(sub, "ps", "the live process tree")
    ps.add_argument("team", nargs="?")
    rows_option(ps, "teammates")
    ps.add_argument(
        "--all", dest="rows", action="store_const", const=0, help="every teammate's row (--rows 0)"
    )
    watch = cmd(sub, "watch", "a live view of a team")
    watch.add_argument("team")
    watch.add_argument("--once", action="store_true", help="print one frame and exit")
    watch.add_argument(
        "--compact", action="store_true", help="the task counts and one line per teammate only"
    )
    rows_option(watch, "teammates (printed to a pipe; a terminal's height decides there)")

    if want(*VIEWS):
        from supervisor.cli import look_commands

        look_commands.add_parsers(cmd, sub)
    if want("engine"):
        from supervisor.cli import engine_commands

        engine_commands.add_parser(cmd, sub)

    bench = cmd(sub, "bench", "run the benchmark suite (from a source checkout)")
    bench.add_argument("suite", nargs="?", default="all")
    bench.add_argument("--quick", action="store_true")
    bench.add_argument(
        "--max", type=int, default=None, metavar="N", help="scale: stop at N teammates (16, 256, 1024, 2048)"
    )
    bench.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where results go (default: benchmarks/results of the checkout)",
    )
    return p


def _quiet_broken_pipe() -> None:
    # `agentteams ps | head -1`: the reader went away; exit quietly, as cat does.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _check_root(root: str | None) -> None:
    """An explicit --root must name a directory (or a place for one): never a silent default."""
    if root is None:
        return
    if not root.strip():
        raise InvalidInput(
            "--root is empty; give a directory (leave it out for $AGENTTEAMS_HOME or ~/.agentteams)"
        )
    path = Path(root).expanduser()
    if path.exists() and not path.is_dir():
        raise InvalidInput(
            f"--root {root} is not a directory; give the directory that holds teams/ and tasks/"
        )


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    # The library's warnings (a skipped inbox entry, a repaired file) in our one-line form.
    logging.basicConfig(level=logging.WARNING, format="agentteams: warning: %(message)s")
    as_program = argv is None
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(command_of(argv)).parse_args(argv)

    if getattr(args, "engine", None):
        os.environ["AGENTTEAMS_ENGINE"] = args.engine  # this command and what it starts

    if args.command in LONG_RUNNING:
        # A closed terminal (SIGHUP) or a kill (SIGTERM) cleans up as Ctrl-C does.
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _interrupt)
    try:
        _check_root(args.root)
        run = importlib.import_module(HOMES[args.command]).COMMANDS[args.command]
        code = int(run(args))
        if as_program and args.command in QUICK_EXIT:
            exit_now(code)
        return code
    except AgentTeamsError as exc:
        print(f"agentteams: error: {exc.message}", file=sys.stderr)
        return exits.ERROR
    except KeyboardInterrupt:
        print("agentteams: interrupted", file=sys.stderr)
        return exits.INTERRUPTED
    except BrokenPipeError:
        _quiet_broken_pipe()
        return 0
    except Exception as exc:  # never a traceback to a user
        print(f"agentteams: {internal_error_line(exc)}", file=sys.stderr)
        return exits.INTERNAL


if __name__ == "__main__":
    sys.exit(main())
