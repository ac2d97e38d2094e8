"""Exit codes a script can trust, one table for every command.

0 only when the job did all it was asked (for ``lead``, ``chat`` and ``run``: every task
completed); the rest say why not."""

from __future__ import annotations

OK = 0
ERROR = 1  # bad input, a refused command, or an agent that could not go on
USAGE = 2  # the command line itself (argparse)
TASKS_FAILED = 3  # a task failed, or tasks were left open
TIMEOUT = 4  # --timeout (or a scenario's timeout) came first
BUDGET = 5  # a token or dollar budget was used up
INTERNAL = 70  # a bug of ours (EX_SOFTWARE)
INTERRUPTED = 130  # Ctrl-C, a closed terminal, SIGTERM

FOR_STOP = {
    "done": OK,
    "failed": TASKS_FAILED,
    "unfinished": TASKS_FAILED,
    "timeout": TIMEOUT,
    "budget": BUDGET,
    "error": ERROR,
    "interrupted": INTERRUPTED,
}
