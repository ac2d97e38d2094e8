"""What a person sees first when a team has more rows than a screen: a one-line count, then
the teammates and tasks that need a look (failed, working, starting) before the quiet ones.

Every door that lists teammates or tasks for a person (``ps``, ``watch``, ``task list``)
orders and counts them here, so a team of two thousand reads the same everywhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Protocol, TypeVar

from ipc.schemas import Task

# Who needs a look first; a state not listed comes after these, before idle ones.
MATE_ORDER = ("failed", "exited", "running", "starting", "stopping", "connected", "active")
QUIET = ("idle", "inactive")
TASK_ORDER = ("failed", "in_progress", "pending", "completed")
DEFAULT_ROWS = 40  # rows of teammates or tasks a listing shows before it counts the rest

T = TypeVar("T")


class HasState(Protocol):
    @property
    def state(self) -> str: ...


M = TypeVar("M", bound=HasState)


def _mate_rank(state: str) -> int:
    if state in MATE_ORDER:
        return MATE_ORDER.index(state)
    return len(MATE_ORDER) + (1 + QUIET.index(state) if state in QUIET else 0)


def mates_first(mates: Sequence[M]) -> list[M]:
    """Failed, exited, running, starting… then idle: each group in its own order."""
    return sorted(mates, key=lambda m: _mate_rank(m.state))


def count_line(what: str, states: Sequence[str], order: Sequence[str], more: bool = False) -> str:
    """``2,048 teammates: 12 running · 2,036 idle``: the states in ``order``, then any other
    (``more``: ``2,000 more teammates: …``, for the rows left out)."""
    counts = Counter(states)
    named = [s for s in order if counts[s]] + sorted(s for s in counts if s not in order)
    parts = " · ".join(f"{counts[s]:,} {s.replace('_', ' ')}" for s in named)
    noun = what.removesuffix("s") if len(states) == 1 else what  # teammates, tasks: one of them
    return f"{len(states):,} {'more ' if more else ''}{noun}" + (f": {parts}" if parts else "")


def mates_line(mates: Sequence[HasState], more: bool = False) -> str:
    order = (*MATE_ORDER[:3], "idle", *MATE_ORDER[3:])
    return count_line("teammates", [m.state for m in mates], order, more)


def task_state(task: Task) -> str:
    return "failed" if task.failed else task.status


def tasks_first(tasks: Sequence[Task]) -> list[Task]:
    """Failed, in progress, pending (lowest id first), then the most recently completed."""
    by = {s: [t for t in tasks if task_state(t) == s] for s in TASK_ORDER}
    other = [t for t in tasks if task_state(t) not in TASK_ORDER]
    return [*by["failed"], *by["in_progress"], *by["pending"], *other, *reversed(by["completed"])]


def tasks_line(tasks: Sequence[Task], more: bool = False) -> str:
    return count_line("tasks", [task_state(t) for t in tasks], TASK_ORDER, more)


def budget(rows: Sequence[T], limit: int | None) -> tuple[list[T], int]:
    """The first ``limit`` rows (None or 0: all) and how many were left out."""
    if not limit or len(rows) <= limit:
        return list(rows), 0
    return list(rows[:limit]), len(rows) - limit
