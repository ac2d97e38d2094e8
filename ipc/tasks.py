"""The shared task list: ``tasks/{team}/{id}.json``, one file per task.

Every mutation holds the task-list lock (``tasks/{team}/.lock``) for its whole
read-check-write, so a claim is atomic and dependency edges change on both sides together.
Reads take no lock: each file is replaced whole.
"""

from __future__ import annotations

import builtins
import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import msgspec
from msgspec import UNSET, Struct

from ipc.clock import now_iso
from ipc.errors import Conflict, CorruptFile, InvalidInput, NotFound
from ipc.paths import TeamPaths, normalise_agent_name
from ipc.schemas import LEAD_NAME, Task, TaskAssignment, body_text, dump_json
from ipc.storage import atomic_write, ensure_dir, locked, read_bytes, refuse_claude_root

log = logging.getLogger("agentteams.tasks")

ClaimReason = Literal["task_not_found", "already_claimed", "already_resolved", "blocked", "agent_busy"]
STATUSES = ("pending", "in_progress", "completed", "deleted")
_decoder = msgspec.json.Decoder(Task)
_TASK_FILE = re.compile(r"^([0-9]{1,12})\.json$")


class ClaimResult(Struct, kw_only=True):
    success: bool
    reason: ClaimReason | None = None
    task: Task | None = None


def claim_prompt(task: Task) -> str:
    """Claude Code's auto-claim prompt (seed 000 §8, ``PZY``)."""
    prompt = f"Complete all open tasks. Start with task #{task.id}:\n\n {task.subject}"
    if task.description:
        prompt += f"\n\n{task.description}"
    return prompt


def _numeric(task_id: str) -> int:
    return int(task_id)


class TaskList:
    def __init__(self, root: str | os.PathLike[str] | None, team: str) -> None:
        self.paths = TeamPaths(root, team)
        self.team = self.paths.team
        self.dir = self.paths.tasks_dir
        self.problems: builtins.list[str] = []

    # ------------------------------------------------------------ reading

    def _read(self, path: Path) -> Task:
        data = read_bytes(path)
        if data is None:
            raise NotFound(f"task #{path.stem} does not exist in team {self.team!r}")
        try:
            task = _decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise CorruptFile(path, f"not a valid task ({exc})") from exc
        if task.id != path.stem:
            raise CorruptFile(path, f"holds task id {task.id!r}, expected {path.stem!r}")
        return task

    def get(self, task_id: str) -> Task:
        return self._read(self.paths.task(str(task_id)))

    def list(self) -> builtins.list[Task]:
        """Every valid task by numeric id; invalid files are reported in ``problems``, skipped."""
        self.problems = []
        if not self.dir.is_dir():
            return []
        found: builtins.list[Task] = []
        for entry in os.listdir(self.dir):
            if not _TASK_FILE.match(entry):
                continue
            try:
                found.append(self._read(self.dir / entry))
            except NotFound:
                continue  # deleted between listdir and read
            except CorruptFile as exc:
                self.problems.append(exc.message)
                log.warning("%s; skipped (file kept)", exc.message)
        found.sort(key=lambda t: _numeric(t.id))
        return found

    def _index(self) -> dict[str, Task]:
        return {t.id: t for t in self.list()}

    @staticmethod
    def _open_ids(tasks: Iterable[Task]) -> set[str]:
        return {t.id for t in tasks if t.status != "completed"}

    def find_claimable(self) -> Task | None:
        """The lowest-id task that is pending, unowned and has no open blocker."""
        return self._claimable(self.list())

    @classmethod
    def _claimable(cls, tasks: builtins.list[Task]) -> Task | None:
        open_ids = cls._open_ids(tasks)
        for task in tasks:
            if task.status == "pending" and task.owner_name is None and not open_ids & set(task.blocked_by):
                return task
        return None

    # ------------------------------------------------------------ writing

    def _write(self, task: Task) -> None:
        atomic_write(self.paths.task(task.id), dump_json(task))

    def _lock(self) -> Any:
        refuse_claude_root(self.paths.root)
        ensure_dir(self.dir)
        return locked(self.paths.tasks_lock)

    def create(
        self,
        subject: str,
        description: str = "",
        *,
        active_form: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Task:
        """Create a pending task with the next id; ids are never reused (``.highwatermark``)."""
        if not isinstance(subject, str) or not subject.strip():
            raise InvalidInput("a task needs a subject: a short imperative sentence like 'Count the words'")
        if metadata is not None and not isinstance(metadata, dict):
            raise InvalidInput(f"task metadata must be a JSON object, not {type(metadata).__name__}")
        with self._lock():
            highest = self._highwatermark()
            existing = [int(m.group(1)) for e in os.listdir(self.dir) if (m := _TASK_FILE.match(e))]
            next_id = str(max([highest, *existing]) + 1)
            task = Task(
                id=next_id,
                subject=subject,
                description=description,
                active_form=UNSET if active_form is None else active_form,
                status="pending",
                blocks=[],
                blocked_by=[],
                metadata=UNSET if metadata is None else metadata,
            )
            # Task first, then the mark: a crash between leaves the file, whose id the next
            # create sees in the directory, so no id is ever issued twice.
            self._write(task)
            atomic_write(self.paths.highwatermark, next_id.encode())
            return task

    def update(
        self,
        task_id: str,
        *,
        status: str | None = None,
        subject: str | None = None,
        description: str | None = None,
        active_form: str | None = None,
        owner: str | None = None,
        add_blocks: Iterable[str] | None = None,
        add_blocked_by: Iterable[str] | None = None,
        metadata: dict[str, Any] | None = None,
        by: str = LEAD_NAME,
    ) -> Task | None:
        """Merge the given fields into the task; returns it, or None when status='deleted'.

        ``owner=""`` clears the owner. Setting the owner to an agent other than ``by`` sends
        that agent a ``task_assignment``. Blocks/blockedBy are kept symmetric; a dependency
        on a missing task or one that would make a cycle is refused and nothing changes.
        """
        task_id = str(task_id)
        if status is not None and status not in STATUSES:
            raise InvalidInput(f"task status {status!r} is not one of {', '.join(STATUSES)}")
        if status == "deleted":
            self.delete(task_id)
            return None
        if metadata is not None and not isinstance(metadata, dict):
            raise InvalidInput(f"task metadata must be a JSON object, not {type(metadata).__name__}")
        new_owner = None if owner is None else (normalise_agent_name(owner) if owner else "")
        if new_owner:
            # Refuse before changing anything: an assignment must reach a real inbox.
            from ipc.config import TeamConfigStore

            config_store = TeamConfigStore(self.paths.root, self.team)
            if config_store.exists():
                config_store.require_member(new_owner)
        with self._lock():
            tasks = self._index()
            if task_id not in tasks:
                raise NotFound(f"task #{task_id} does not exist in team {self.team!r}")
            task = tasks[task_id]
            previous_owner = task.owner_name
            changed: dict[str, Task] = {}
            for blocked_id in add_blocks or []:
                self._link(tasks, blocker=task_id, blocked=str(blocked_id), changed=changed)
            for blocker_id in add_blocked_by or []:
                self._link(tasks, blocker=str(blocker_id), blocked=task_id, changed=changed)
            task = tasks[task_id]
            fields: dict[str, Any] = {}
            if subject is not None:
                fields["subject"] = subject
            if description is not None:
                fields["description"] = description
            if active_form is not None:
                fields["active_form"] = active_form
            if new_owner is not None:
                fields["owner"] = new_owner or UNSET
            if metadata is not None:
                merged = dict(task.metadata) if isinstance(task.metadata, dict) else {}
                merged.update(metadata)
                fields["metadata"] = merged
            if status is not None:
                fields["status"] = status
            task = msgspec.structs.replace(task, **fields)
            tasks[task_id] = changed[task_id] = task
            if status == "completed":
                self._unlink_all(tasks, task_id, changed)
            for item in changed.values():
                self._write(item)
            result = tasks[task_id]
        if new_owner and new_owner != previous_owner and new_owner != by:
            self._send_assignment(result, assigned_by=by)
        return result

    def _link(self, tasks: dict[str, Task], *, blocker: str, blocked: str, changed: dict[str, Task]) -> None:
        for tid in (blocker, blocked):
            if tid not in tasks:
                raise NotFound(f"task #{tid} does not exist in team {self.team!r}; cannot add the dependency")
        if blocker == blocked:
            raise Conflict(f"task #{blocker} cannot block itself")
        if tasks[blocker].status == "completed":
            return  # a completed blocker is already satisfied: nothing to wait for
        if self._reaches(tasks, start=blocked, goal=blocker):
            raise Conflict(
                f"task #{blocked} blocked by #{blocker} would make a dependency cycle "
                f"(#{blocked} already leads to #{blocker})"
            )
        a, b = tasks[blocker], tasks[blocked]
        if blocked not in a.blocks:
            tasks[blocker] = changed[blocker] = msgspec.structs.replace(a, blocks=[*a.blocks, blocked])
        if blocker not in b.blocked_by:
            tasks[blocked] = changed[blocked] = msgspec.structs.replace(b, blocked_by=[*b.blocked_by, blocker])

    @staticmethod
    def _reaches(tasks: dict[str, Task], *, start: str, goal: str) -> bool:
        """True if ``goal`` is reachable from ``start`` by following ``blocks`` edges."""
        seen, stack = set(), [start]
        while stack:
            current = stack.pop()
            if current == goal:
                return True
            if current in seen or current not in tasks:
                continue
            seen.add(current)
            stack.extend(tasks[current].blocks)
        return False

    @staticmethod
    def _unlink_all(tasks: dict[str, Task], task_id: str, changed: dict[str, Task]) -> None:
        """Remove every edge touching ``task_id`` from both sides."""
        for other_id, other in list(tasks.items()):
            if other_id == task_id:
                continue
            if task_id in other.blocks or task_id in other.blocked_by:
                tasks[other_id] = changed[other_id] = msgspec.structs.replace(
                    other,
                    blocks=[x for x in other.blocks if x != task_id],
                    blocked_by=[x for x in other.blocked_by if x != task_id],
                )
        me = tasks[task_id]
        tasks[task_id] = changed[task_id] = msgspec.structs.replace(me, blocks=[], blocked_by=[])

    def _send_assignment(self, task: Task, *, assigned_by: str) -> None:
        from ipc.mailbox import Mailbox

        body = TaskAssignment(
            task_id=task.id,
            subject=task.subject,
            description=task.description,
            assigned_by=assigned_by,
            timestamp=now_iso(),
        )
        if task.owner_name is not None:
            Mailbox(self.paths.root, self.team, task.owner_name).append(sender=assigned_by, text=body_text(body))

    def delete(self, task_id: str) -> None:
        """Remove the task and every reference to it; its id is never issued again."""
        task_id = str(task_id)
        with self._lock():
            tasks = self._index()
            if task_id not in tasks:
                raise NotFound(f"task #{task_id} does not exist in team {self.team!r}")
            changed: dict[str, Task] = {}
            self._unlink_all(tasks, task_id, changed)
            for other_id, item in changed.items():
                if other_id != task_id:
                    self._write(item)
            # A create killed between its task file and the mark leaves the mark behind; once
            # the file is gone only the mark remembers the id, so raise it first.
            if self._highwatermark() < int(task_id):
                atomic_write(self.paths.highwatermark, task_id.encode())
            os.unlink(self.paths.task(task_id))

    def _highwatermark(self) -> int:
        mark = read_bytes(self.paths.highwatermark)
        return int(mark) if mark and mark.strip().isdigit() else 0

    def claim(self, task_id: str, agent: str, *, check_agent_busy: bool = False) -> ClaimResult:
        """Make ``agent`` the owner and set ``in_progress``, atomically; or say why not."""
        agent = normalise_agent_name(agent)
        with self._lock():
            return self._claim_locked(self.list(), str(task_id), agent, check_agent_busy)

    def _claim_locked(self, tasks: builtins.list[Task], task_id: str, agent: str, check_agent_busy: bool) -> ClaimResult:
        by_id = {t.id: t for t in tasks}
        task = by_id.get(task_id)
        if task is None:
            return ClaimResult(success=False, reason="task_not_found")
        if task.owner_name is not None and task.owner_name != agent:
            return ClaimResult(success=False, reason="already_claimed", task=task)
        if task.status == "completed":
            return ClaimResult(success=False, reason="already_resolved", task=task)
        if self._open_ids(tasks) & set(task.blocked_by):
            return ClaimResult(success=False, reason="blocked", task=task)
        if check_agent_busy and any(
            t.owner_name == agent and t.status == "in_progress" and t.id != task_id for t in tasks
        ):
            return ClaimResult(success=False, reason="agent_busy", task=task)
        claimed = msgspec.structs.replace(task, owner=agent, status="in_progress")
        self._write(claimed)
        return ClaimResult(success=True, task=claimed)

    def claim_next(self, agent: str) -> Task | None:
        """Auto-claim: atomically claim the lowest claimable task for ``agent``, if any."""
        agent = normalise_agent_name(agent)
        if self.find_claimable() is None:  # cheap unlocked look first: idle agents poll this
            return None
        with self._lock():
            tasks = self.list()
            candidate = self._claimable(tasks)
            if candidate is None:
                return None
            result = self._claim_locked(tasks, candidate.id, agent, check_agent_busy=False)
            return result.task if result.success else None

    def release_owner(self, agent: str) -> builtins.list[str]:
        """Put ``agent``'s in_progress tasks back to pending with no owner (after its death)."""
        agent = normalise_agent_name(agent)
        released: builtins.list[str] = []
        with self._lock():
            for task in self.list():
                if task.owner_name == agent and task.status == "in_progress":
                    self._write(msgspec.structs.replace(task, owner=UNSET, status="pending"))
                    released.append(task.id)
        return released
