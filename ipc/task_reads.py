"""Reading the shared task list, without a lock: each task file parsed once and cached
against its identity; listings, what is unfinished and what can be claimed, at the cost of
what is open rather than of the history (:mod:`ipc.task_window`)."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from pathlib import Path

import msgspec

from ipc.errors import CorruptFile, NotFound
from ipc.paths import TeamPaths
from ipc.schemas import Task
from ipc.storage import FileKey, file_key, read_bytes, read_settled
from ipc.task_window import TaskWindow, task_ids

_decoder = msgspec.json.Decoder(Task)


class TaskReads:
    def _bind_reads(self, paths: TeamPaths) -> None:
        self.paths = paths
        self.team = self.paths.team
        self.dir = self.paths.tasks_dir
        self.lock_path = self.paths.tasks_lock
        self.mark_path = self.paths.highwatermark
        self._paths: dict[str, Path] = {}  # task id → its file (paths cost more than the read)
        self.problems: builtins.list[str] = []
        self._cache: dict[str, tuple[FileKey, Task]] = {}
        self.window = TaskWindow(self.dir, self._read_or_gone, self._highwatermark, self._forget)

    def _task_path(self, task_id: str) -> Path:
        path = self._paths.get(task_id)
        if path is None:
            path = self.paths.task(task_id)
            if not self.window.behind(task_id):  # the window forgets it as it passes; behind, nothing would
                self._paths[task_id] = path
        return path

    def _read(self, task_id: str) -> Task:
        path = self._task_path(task_id)
        key = file_key(path)
        if key is None:
            raise NotFound(f"task #{task_id} does not exist in team {self.team!r}")
        cached = self._cache.get(task_id)
        if cached is not None and cached[0] == key:
            return cached[1]
        task = read_settled(path, _decoder.decode, "task")
        if task is None:
            raise NotFound(f"task #{task_id} does not exist in team {self.team!r}")
        if task.id != task_id:
            raise CorruptFile(path, f"holds task id {task.id!r}, expected {task_id!r}")
        if not self.window.behind(task_id):  # completed history is not kept in memory
            self._cache[task_id] = (key, task)
        return task

    def _read_or_gone(self, task_id: str) -> Task | None:
        try:
            return self._read(task_id)
        except NotFound:
            return None

    def _forget(self, task_id: str) -> None:
        self._cache.pop(task_id, None)
        self._paths.pop(task_id, None)

    def get(self, task_id: str) -> Task:
        return self._read(str(task_id))

    def _ids(self) -> builtins.list[str]:
        return [str(n) for n in task_ids(self.dir)]

    def _require_team(self) -> None:
        """NotFound for a team that does not exist: neither its config nor its task list
        (Claude Code keeps a session's own task list with no team config beside it)."""
        if not self.dir.is_dir() and not self.paths.config.exists():
            raise NotFound(self.paths.missing())

    def list(self, *, include_internal: bool = True) -> builtins.list[Task]:
        """Every valid task by numeric id; invalid files are reported in ``problems`` (for the
        caller to show), skipped, kept. ``include_internal=False`` hides Claude Code's
        ``_internal`` teammate tasks, as its TaskList does."""
        self._require_team()
        self.problems = []
        found: builtins.list[Task] = []
        for task_id in self._ids():
            try:
                task = self._read(task_id)
            except NotFound:
                continue  # deleted between listdir and read
            except CorruptFile as exc:
                self.problems.append(f"{exc.message}; skipped (the file is kept)")
                continue
            if include_internal or not task.internal:
                found.append(task)
        return found

    def unfinished(self) -> builtins.list[Task]:
        """Every task that is not completed, by id, at the cost of what is open (not of the
        history): for views refreshed while a team runs (``ps``, ``watch``)."""
        return [t for t in self.window.live() if t.status != "completed"]

    def _get_or_none(self, task_id: str) -> Task | None:
        try:
            return self._read(task_id)
        except (NotFound, CorruptFile):
            return None

    def _blocks(self, task_id: str) -> bool:
        """Whether blocker ``task_id`` is still open: it exists and is not completed. One
        whose file is damaged (a peer killed mid-write) is open: its status cannot be read,
        and taking it for done would start what it blocks."""
        try:
            return self._read(task_id).status != "completed"
        except NotFound:
            return False
        except CorruptFile:
            return True

    def open_blockers(self, task: Task) -> builtins.list[str]:
        """Blockers of ``task`` that exist and are not completed (or cannot be read)."""
        return [b for b in task.blocked_by if not self.window.behind(b) and self._blocks(b)]

    def is_claimable(self, task: Task) -> bool:
        return (
            task.status == "pending"
            and task.owner_name is None
            and not task.failed
            and not task.internal
            and not self.open_blockers(task)
        )

    def find_claimable(self) -> Task | None:
        """The lowest-id task that is pending, unowned, not failed and has no open blocker."""
        return next(self._claimables(), None)

    def _claimables(self) -> Iterator[Task]:
        """Claimable tasks by id, read lazily: a claim looks past the tasks in progress at the
        front, not at every open task (a burst of a thousand would cost each claim a
        thousand reads). Blockers are judged by reading them (cached), so no whole listing
        is needed."""
        return (t for t in self.window.walk() if self.is_claimable(t))

    def _highwatermark(self) -> int:
        mark = read_bytes(self.mark_path)
        return int(mark) if mark and mark.strip().isdigit() else 0
