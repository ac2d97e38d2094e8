"""Which task files a hot path must look at: those past the completed prefix.

A team that runs for hours piles up completed tasks. A claim, a release or a wake cares only
about tasks that are not completed, so a task list remembers the longest prefix of ids that
were all completed (or deleted) and looks only past it: the cost follows what is open, not
the history. Ids are never reused and new ones are above every existing file and the
``.highwatermark``, so new tasks appear past the prefix. A peer could still reopen a completed
task behind it: a sweep every :data:`SWEEP_EVERY` seconds stats the files behind the prefix
and moves it back before any that changed since the last sweep and is not completed.

The prefix is shared through a hint file, :data:`HINT` beside the tasks: after its sweep a
process writes "at T, every id up to K was completed or gone". A process starting (a
restarted teammate, a CLI command) takes the hint instead of reading every task ever made,
and a running one whose sweep falls due within :data:`SWEEP_EVERY` of someone else's takes
theirs instead of stating the history again: one sweep per team per interval, not one per
process. Each sweep covers changes since the sweep it continues, so none are missed. The
hint names the file of task K as it was (inode, mtime, size): a task list reset, or task K
changed since, makes it fall back to reading, never to trusting it. It is advisory: a torn
or missing hint only costs reads.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from ipc.errors import CorruptFile
from ipc.leftovers import remove_dead_temps, temp_path
from ipc.paths import child_path
from ipc.schemas import Task
from ipc.storage import file_key

SWEEP_EVERY = 30.0
CATCH_UP = 64  # tasks behind the newest past which a walk takes (and leaves) the shared prefix
TASK_FILE = re.compile(r"^([0-9]{1,12})\.json$")
HINT = ".agentteams-completed"  # no .json: Claude Code and peers list only {id}.json here
_MARGIN_NS = 2_000_000_000  # clocks and mtimes are coarse


class CompletedPrefix(msgspec.Struct, forbid_unknown_fields=False):
    """The hint: at ``swept_ns`` (wall clock), every task id up to ``through`` was completed
    or gone, and the file of task ``through`` had this ``key`` (inode, mtime_ns, size)."""

    through: int
    swept_ns: int
    key: tuple[int, int, int]


_hint_decoder = msgspec.json.Decoder(CompletedPrefix)


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
        self._files = f"{directory}{os.sep}"  # + "{id}.json": a sweep names every task behind the prefix
        self._read = read
        self._highwatermark = highwatermark
        self._forget = forget
        self.through = 0  # every id up to here was completed or gone
        self.top = 0  # the highest id seen
        self._swept = -math.inf  # monotonic time of the last sweep
        self._swept_ns = 0  # its wall-clock time, against file mtimes
        hint = self._hint()
        if hint is not None:  # as if this process had made that sweep
            self._take(hint)
            self.through = hint.through

    def live(self) -> list[Task]:
        """Every task past the prefix, by id (completed ones included), moving the prefix
        over those completed or gone at its front."""
        return list(self.walk())

    def walk(self) -> Iterator[Task]:
        """:meth:`live`, read as it is consumed: a caller that wants the first few open
        tasks (a claim) reads as far as those, not every task of a burst."""
        if time.monotonic() - self._swept >= SWEEP_EVERY:
            self._sweep()
        self.find_top()
        if self.top - self.through > CATCH_UP:
            self._catch_up()
        start = self.through
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
                yield task
        if self.through - start > CATCH_UP:
            self._write_hint()  # others that fell behind (idle through a burst) take it

    def _catch_up(self) -> None:
        """Far behind the newest task (idle while a burst was handed out and done): take the
        shared prefix if it is further on, rather than read every task of the burst. Taken
        with the time of the sweep it continues, so the next sweep covers what changed since."""
        hint = self._hint()
        if hint is None or hint.through <= self.through:
            return
        for n in range(self.through + 1, hint.through + 1):
            self._forget(str(n))
        self.through = hint.through
        if hint.swept_ns < self._swept_ns:
            self._take(hint)  # an older sweep: ours must look back as far as it does

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
        while os.path.exists(f"{self._files}{top + 1}.json"):  # created, the mark not yet written
            top += 1
        self.top = top

    def _hint(self) -> CompletedPrefix | None:
        """The shared hint, if it still describes this task list."""
        try:
            with open(self.dir / HINT, "rb") as f:
                hint = _hint_decoder.decode(f.read())
        except (OSError, msgspec.DecodeError):
            return None
        if hint.through < 1 or file_key(child_path(self.dir, f"{hint.through}.json")) != hint.key:
            return None
        return hint

    def _take(self, hint: CompletedPrefix) -> None:
        self._swept_ns = hint.swept_ns
        age = max(0.0, (time.time_ns() - hint.swept_ns) / 1e9)
        self._swept = time.monotonic() - age

    def _sweep(self) -> None:
        hint = self._hint()
        if hint is not None and hint.swept_ns > self._swept_ns:
            # Someone swept after us: what they found reopened is behind their prefix, so ours
            # goes no further (ours may be behind theirs: it catches up by reading forwards).
            self.through = min(self.through, hint.through)
            self._take(hint)
            if time.monotonic() - self._swept < SWEEP_EVERY:
                return
        started = time.time_ns()
        ids = task_ids(self.dir)
        since = self._swept_ns - _MARGIN_NS
        for n in ids:
            if n > self.through:
                break
            try:
                changed = os.stat(f"{self._files}{n}.json").st_mtime_ns >= since
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
        self._write_hint()

    def _write_hint(self) -> None:
        key = file_key(child_path(self.dir, f"{self.through}.json")) if self.through else None
        if key is None:
            return  # nothing behind the prefix, or its last task deleted: no hint to give
        data = msgspec.json.encode(CompletedPrefix(self.through, self._swept_ns, key))
        # Unlocked, as it is advisory: a dead writer's temp that a new process with its pid
        # is writing at the moment it is removed costs that process its hint, nothing more.
        remove_dead_temps(self.dir / HINT)
        tmp = temp_path(self.dir / HINT)
        try:  # not atomic_write: that would make the directory again after a team delete
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, self.dir / HINT)
        except OSError:
            return  # advisory: a hint not written costs its readers some reads, nothing else
