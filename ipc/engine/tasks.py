"""The task list as keys of the team's KV bucket: ``task.{id}`` holds the task's JSON (the
same as ``tasks/{team}/{id}.json``), ``tasks.hwm`` the highest id ever issued.

Every write is a compare-and-set on the key's revision. A claim is one: two hosts claiming a
task, exactly one wins. An edit that touches several tasks (a dependency, a completion, a
delete) is computed on :class:`~ipc.task_graph.TaskGraph` from what was read, then written
task by task, each against the revision it was read at; if any was changed meanwhile the
edit is computed again from fresh reads. Edits are idempotent and the task the edit is about
is written last, so an edit cut short (a conflict, a crash) is finished by its retry: no
dependency is left one-sided for longer than that. The rules are those of
:class:`~ipc.tasks.TaskList`; ids are never reused.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
from msgspec import UNSET

from ipc import task_edit, task_notices
from ipc.engine.team import CAS_TRIES, EngineTeam, Entry, Stale
from ipc.errors import Conflict, NotFound
from ipc.paths import TeamPaths, normalise_agent_name
from ipc.preserve import merged, read_object
from ipc.schemas import LEAD_NAME, Task, dump_json
from ipc.task_edit import TaskEdit
from ipc.task_graph import TaskGraph
from ipc.task_rules import Change, ClaimResult, claimable, released_metadata
from ipc.tasks import ReadyHook, TaskList

if TYPE_CHECKING:
    from ipc.messaging import Messenger

R = TypeVar("R")
HWM = "tasks.hwm"
_decoder = msgspec.json.Decoder(Task)


def task_key(task_id: str) -> str:
    return f"task.{task_id}"


class EngineTaskList(TaskList):
    def __init__(
        self,
        paths: TeamPaths,
        engine: EngineTeam,
        *,
        on_ready: ReadyHook | None = None,
        messenger: Messenger | None = None,
    ) -> None:
        self.paths = paths
        self.team = paths.team
        self.dir = paths.tasks_dir
        self.problems: builtins.list[str] = []
        self.engine = engine
        self.on_ready = on_ready
        self._messenger = messenger

    @property
    def messenger(self) -> Messenger:
        assert self._messenger is not None, "an engine task list is built with its messenger"
        return self._messenger

    # ------------------------------------------------------------ reading

    def _entry(self, task_id: str, fresh: bool = False) -> tuple[Task, Entry] | None:
        key = task_key(task_id)
        entry = self.engine.get(key, fresh=fresh)
        if entry is None and not fresh:
            entry = self.engine.get(key, fresh=True)  # made a moment ago elsewhere?
        if entry is None:
            return None
        try:
            return self.engine.decoded(key, entry, _decoder.decode), entry
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None

    def _read(self, task_id: str) -> Task:
        found = self._entry(str(task_id))
        if found is None:
            raise NotFound(f"task #{task_id} does not exist in team {self.team!r}")
        return found[0]

    def get(self, task_id: str) -> Task:
        return self._read(str(task_id))

    def _get_or_none(self, task_id: str) -> Task | None:
        found = self._entry(str(task_id))
        return found[0] if found else None

    def list(self, *, include_internal: bool = True) -> builtins.list[Task]:
        self.problems = []
        found: builtins.list[Task] = []
        keys = self.engine.keys("task.")
        for key in sorted(keys, key=lambda k: int(k[5:]) if k[5:].isdigit() else 0):
            entry = self.engine.get(key)
            if entry is None:
                continue
            try:
                task = self.engine.decoded(key, entry, _decoder.decode)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                self.problems.append(f"{self.engine.bucket}/{key}: not a valid task ({exc}); skipped")
                continue
            if include_internal or not task.internal:
                found.append(task)
        return found

    def unfinished(self) -> builtins.list[Task]:
        return [t for t in self.list() if t.status != "completed"]

    def open_blockers(self, task: Task) -> builtins.list[str]:
        return [
            b for b in task.blocked_by if (t := self._get_or_none(b)) is not None and t.status != "completed"
        ]

    def is_claimable(self, task: Task) -> bool:
        return (
            task.status == "pending"
            and task.owner_name is None
            and not task.failed
            and not task.internal
            and not self.open_blockers(task)
        )

    def find_claimable(self) -> Task | None:
        return next(claimable(self.list()), None)

    def _highwatermark(self) -> int:
        entry = self.engine.get(HWM)
        return int(entry.data) if entry is not None and entry.data.strip().isdigit() else 0

    # ------------------------------------------------------------ writing

    def _encode(self, task: Task, original: bytes | None) -> bytes:
        return dump_json(merged(read_object(original) if original else None, task))

    def _apply(
        self,
        edit: Callable[[TaskGraph], R],
        *,
        first: Iterable[str] = (),
        last: Iterable[str] = (),
        deleting: str = "",
    ) -> R:
        """Compute ``edit`` on the tasks as read, write what it changed (``first`` before the
        rest, ``last`` after), delete ``deleting``; all over again from fresh reads if any
        task changed meanwhile."""
        first, last = builtins.list(first), builtins.list(last)
        for attempt in range(CAS_TRIES):
            read: dict[str, tuple[Entry | None, int]] = {}

            def reader(
                task_id: str, read: dict[str, tuple[Entry | None, int]] = read, fresh: bool = attempt > 0
            ) -> Task | None:
                entry, rev = self.engine.lookup(task_key(task_id), fresh=fresh)
                if entry is None and not fresh:
                    entry, rev = self.engine.lookup(task_key(task_id), fresh=True)
                read[task_id] = (entry, rev)
                if entry is None:
                    return None
                try:
                    return self.engine.decoded(task_key(task_id), entry, _decoder.decode)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    return None

            graph = TaskGraph(self.team, reader)
            result = edit(graph)
            changed = graph.changed
            order = [t for t in first if t in changed]
            order += [t for t in changed if t not in first and t not in last and t != deleting]
            order += [t for t in last if t in changed and t != deleting]
            try:
                for task_id in order:
                    entry, rev = read.get(task_id, (None, 0))
                    data = self._encode(changed[task_id], entry.data if entry else None)
                    if entry is None or data != entry.data:
                        self.engine.write(task_key(task_id), data, rev)
                if deleting:
                    entry, rev = read.get(deleting, (None, 0))
                    if entry is not None:
                        self.engine.write(task_key(deleting), None, rev)
            except Stale:
                continue
            return result
        raise Conflict(
            f"the task list of {self.team!r} kept changing under us ({CAS_TRIES} tries); try again"
        )

    def _allocate(self, count: int) -> builtins.list[str]:
        """``count`` new ids, above every id ever issued."""
        top: builtins.list[int] = []

        def bump(entry: Entry | None) -> bytes:
            current = int(entry.data) if entry is not None and entry.data.strip().isdigit() else 0
            top[:] = [current]
            return str(current + count).encode()

        self.engine.update(HWM, bump, "issuing task ids")
        return [str(top[0] + 1 + i) for i in range(count)]

    def create_many(
        self,
        specs: Iterable[tuple[str, str, str | None, dict[str, Any] | None, builtins.list[str]]],
        *,
        owner: str | None = None,
        by: str = LEAD_NAME,
    ) -> builtins.list[Task]:
        specs = builtins.list(specs)
        owner = self._checked_owner(specs, owner)
        for *_, deps in specs:  # refused before an id is issued: a missing blocker
            for dep in deps:
                if not dep.startswith("@") and self._get_or_none(str(dep)) is None:
                    raise NotFound(
                        f"task #{dep} does not exist in team {self.team!r}; cannot add the dependency"
                    )
        ids = self._allocate(len(specs))

        def edit(graph: TaskGraph) -> builtins.list[Task]:
            for task_id, (subject, description, active_form, metadata, _) in zip(ids, specs, strict=True):
                if graph.get(task_id) is None:
                    graph.put(
                        Task(
                            id=task_id,
                            subject=subject,
                            description=description,
                            active_form=UNSET if active_form is None else active_form,
                            status="pending",
                            blocks=[],
                            blocked_by=[],
                            metadata=UNSET if metadata is None else metadata,
                            owner=owner or UNSET,
                        )
                    )
            for task_id, (*_, deps) in zip(ids, specs, strict=True):
                for dep in deps:
                    blocker = ids[int(dep[1:]) - 1] if dep.startswith("@") else str(dep)
                    graph.link(blocker=blocker, blocked=task_id)
            return [graph.nodes[i] for i in ids]

        created = self._apply(edit, first=ids)
        if owner:
            self._created(created, owner, by, "")
        else:
            self._ready([t.id for t in created if not self.open_blockers(t)])
        return created

    def create(
        self,
        subject: str,
        description: str = "",
        *,
        active_form: str | None = None,
        metadata: dict[str, Any] | None = None,
        blocked_by: Iterable[str] = (),
        owner: str | None = None,
        by: str = LEAD_NAME,
    ) -> Task:
        specs = [(subject, description, active_form, metadata, builtins.list(blocked_by))]
        return self.create_many(specs, owner=owner, by=by)[0]

    def change(
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
        remove_blocks: Iterable[str] | None = None,
        remove_blocked_by: Iterable[str] | None = None,
        metadata: dict[str, Any] | None = None,
        by: str = LEAD_NAME,
    ) -> Change:
        task_id = str(task_id)
        edit = TaskEdit.checked(
            status=status,
            subject=subject,
            description=description,
            active_form=active_form,
            owner=owner,
            add_blocks=add_blocks,
            add_blocked_by=add_blocked_by,
            remove_blocks=remove_blocks,
            remove_blocked_by=remove_blocked_by,
            metadata=metadata,
        )
        if edit.status == "deleted":
            return Change(None, self.delete(task_id, by=by))
        if edit.owner:
            self._require_member(edit.owner)

        def make(graph: TaskGraph) -> task_edit.Applied:
            return task_edit.apply(graph, task_id, edit, self)

        return self._tell(self._apply(make, last=[task_id]), edit, by)

    def delete(self, task_id: str, by: str = LEAD_NAME) -> builtins.list[str]:
        task_id = str(task_id)

        def edit(graph: TaskGraph) -> tuple[builtins.list[str], builtins.list[Task]]:
            held = graph.get(task_id)
            if held is None:
                raise NotFound(f"task #{task_id} does not exist in team {self.team!r}")
            holds = task_edit.held_up_by(graph, held)
            dependents = graph.detach(task_id)
            task_edit.forget_in_records(graph, task_id, [t.id for t in self.list()])
            unblocked = [t.id for t in dependents if self.is_claimable(t)]
            return unblocked, task_edit.owned_and_ready(graph, holds, self)

        unblocked, freed = self._apply(edit, deleting=task_id)
        task_notices.tell_freed(self.messenger, freed, by)
        self._ready(unblocked)
        return unblocked

    def claim(self, task_id: str, agent: str, *, check_agent_busy: bool = False) -> ClaimResult:
        """One compare-and-set on the task's key: of any number of claimers, on any hosts,
        exactly one wins."""
        agent = normalise_agent_name(agent)
        task_id = str(task_id)
        if not re.fullmatch(r"[0-9]{1,12}", task_id):
            return ClaimResult(success=False, reason="task_not_found")
        for attempt in range(CAS_TRIES):
            found = self._entry(task_id, fresh=attempt > 0)
            if found is None:
                return ClaimResult(success=False, reason="task_not_found")
            task, entry = found
            if task.owner_name is not None and task.owner_name != agent:
                return ClaimResult(success=False, reason="already_claimed", task=task)
            if task.status == "completed":
                return ClaimResult(success=False, reason="already_resolved", task=task)
            if self.open_blockers(task) and self._blocked_fresh(task):
                return ClaimResult(success=False, reason="blocked", task=task)
            if check_agent_busy and any(
                t.owner_name == agent and t.status == "in_progress" and t.id != task_id for t in self.list()
            ):
                return ClaimResult(success=False, reason="agent_busy", task=task)
            claimed = msgspec.structs.replace(task, owner=agent, status="in_progress")
            try:
                self.engine.write(task_key(task_id), self._encode(claimed, entry.data), entry.rev)
            except Stale:
                continue
            return ClaimResult(success=True, task=claimed)
        raise Conflict(f"task #{task_id} kept changing under us ({CAS_TRIES} tries); try again")

    def _blocked_fresh(self, task: Task) -> bool:
        """Blockers that are open as the server has them now (the copy may lag a moment)."""
        return any(
            (found := self._entry(b, fresh=True)) is not None and found[0].status != "completed"
            for b in task.blocked_by
        )

    def hand_out(self, pairs: builtins.list[tuple[str, str]]) -> builtins.list[tuple[str, str]]:
        """Each claimable task claimed for its agent, one compare-and-set each."""
        return [
            (task_id, agent)
            for task_id, agent in pairs
            if (task := self._get_or_none(task_id)) is not None
            and self.is_claimable(task)
            and self.claim(task_id, agent).success
        ]

    def claim_next(self, agent: str, hint: str = "") -> Task | None:
        agent = normalise_agent_name(agent)
        if hint:
            candidate = self._get_or_none(hint)
            if candidate is not None and self.is_claimable(candidate):
                result = self.claim(hint, agent)
                if result.success:
                    return result.task
        for candidate in builtins.list(claimable(self.list()))[:8]:
            result = self.claim(candidate.id, agent)
            if result.success:
                return result.task
        return None

    def release_owner(self, agent: str, *, error: str = "", crash: str = "") -> builtins.list[str]:
        agent = normalise_agent_name(agent)
        released: builtins.list[str] = []
        for task in self.list():
            if task.owner_name != agent or task.status != "in_progress":
                continue

            def edit(graph: TaskGraph, task_id: str = task.id) -> bool:
                current = graph.get(task_id)
                if current is None or current.owner_name != agent or current.status != "in_progress":
                    return False
                meta = released_metadata(current.meta, error, crash)
                graph.put(
                    msgspec.structs.replace(current, owner=UNSET, status="pending", metadata=meta or UNSET)
                )
                return True

            if self._apply(edit, last=[task.id]):
                released.append(task.id)
        return released
