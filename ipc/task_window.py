"""Which task files a hot path must look at: those past the completed prefix.

A team that runs for hours piles up completed tasks. A claim, a release or a wake cares only
about tasks that are not completed, so a task list remembers the longest prefix of ids that
were all completed (or deleted) and looks only past it: the cost follows what is open, not
the history. Ids are never reused and new ones are above every existing file and the
``.highwatermark``, so new tasks appear past the prefix. A peer could still reopen a completed
task behind it: a sweep every :data:`SWEEP_EVERY` seconds stats the files behind the prefix
and moves it back before any that changed since the last sweep and is not completed.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from ipc.errors import CorruptFile
from ipc.schemas import Task

SWEEP_EVERY = 30.0
TASK_FILE = re.compile(r"^([0-9]{1,12})\.json$")


def task_ids(directory: Path) -> list[int]:
    """Every task id with a file in ``directory``, ascending."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for name in names if (m := TASK_FILE.match(name)))


class TaskWindow:
    """``read(id)`` returns the task, None if its file is gone, and raises for a file that
    does not decode; ``forget(id)`` drops what the owner caches for a task behind the prefix."""

    def __init__(
        self,
        directory: Path,
        read: Callable[[str], Task | None],
        highwatermark: Callable[[], int],
        forget: Callable[[str], None],
    ) -> None:
        self.dir = directory
        self._read = read
        self._highwatermark = highwatermark
        self._forget = forget
        self.through = 0  # every id up to here was completed or gone
        self.top = 0  # the highest id seen
        self._swept = -math.inf  # monotonic time of the last sweep
        self._swept_ns = 0  # its wall-clock time, against file mtimes

    def live(self) -> list[Task]:
        """Every task past the prefix, by id (completed ones included), moving the prefix
        over those completed or gone at its front."""
        if time.monotonic() - self._swept >= SWEEP_EVERY:
            self._sweep()
        self.find_top()
        found: list[Task] = []
        front = True
        for n in range(self.through + 1, self.top + 1):
            try:
                task = self._read(str(n))
            except CorruptFile:
                front = False  # caught mid-write by a peer, or damaged: look again next time
                continue
            done = task is None or task.status == "completed"
            if front and done:
                self.through = n
                self._forget(str(n))
                continue
            front = False
            if task is not None:
                found.append(task)
        return found

    def reopened(self, task: Task) -> None:
        """A task this process wrote: if it is open and behind the prefix, the prefix moves
        back before it at once (a peer's reopening waits for the sweep)."""
        if task.status != "completed" and self.behind(task.id):
            self.through = int(task.id) - 1

    def behind(self, task_id: str) -> bool:
        """True if ``task_id`` is behind the prefix (so completed or gone, as of the last look)."""
        return task_id.isdigit() and int(task_id) <= self.through

    def find_top(self) -> None:
        top = max(self.top, self._highwatermark())
        while (self.dir / f"{top + 1}.json").exists():  # created, the mark not yet written
            top += 1
        self.top = top

    def _sweep(self) -> None:
        started = time.time_ns()
        ids = task_ids(self.dir)
        since = self._swept_ns - 2_000_000_000  # clocks and mtimes are coarse: a margin
        for n in ids:
            if n > self.through:
                break
            try:
                changed = os.stat(self.dir / f"{n}.json").st_mtime_ns >= since
            except FileNotFoundError:
                continue
            if changed:
                try:
                    task = self._read(str(n))
                except CorruptFile:
                    task = None
                    self.through = min(self.through, n - 1)
                if task is not None and task.status != "completed":
                    self.through = n - 1
                    break
        self.top = max([self.top, *ids[-1:]])
        self._swept, self._swept_ns = time.monotonic(), started
