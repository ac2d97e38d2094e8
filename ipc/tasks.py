"""The shared task list: ``tasks/{team}/{id}.json``, one file per task.

Every mutation holds the task-list lock (``tasks/{team}/.lock``, plus Claude Code's lock of
each task file it writes, in a Claude Code root) for its whole read-check-write, so a claim
is atomic and dependency edges change on both sides together. A mutation reads only the
files it needs: a claim reads the task and its blockers, a completion the task and the
tasks it blocks. Reads take no lock; parsed files are cached against their identity.

A task that failed (``metadata.lastError``) is not claimed again automatically: it waits,
shown as failed, until someone sets it back to pending (which clears the error) or assigns
it. Fields other writers keep in a task file survive every rewrite.

Reading is in :mod:`ipc.task_reads`, claims (and the locked write) in
:mod:`ipc.task_claims`, the rules that need no files in :mod:`ipc.task_rules`, the dependency
graph in :mod:`ipc.task_graph`, what hot paths look at in :mod:`ipc.task_window`.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
from msgspec import UNSET

from ipc import task_edit
from ipc.clock import now_iso
from ipc.errors import InvalidInput
from ipc.paths import TeamPaths, normalise_agent_name
from ipc.schemas import LEAD_NAME, Task, TaskAssignment
from ipc.storage import make_spare, rewrite
from ipc.task_claims import TaskClaims
from ipc.task_edit import TaskEdit
from ipc.task_graph import TaskGraph
from ipc.task_rules import (
    Change,
    check_text,
)

if TYPE_CHECKING:
    from ipc.messaging import Messenger


class Ready(Protocol):
    """Told of tasks a change made claimable; ``handed``: the teammate the first was handed to."""

    def __call__(self, ids: builtins.list[str], handed: str = "") -> None: ...


class TaskList(TaskClaims):
    """``on_ready`` is told the ids of tasks a change made claimable (created, unblocked,
    released), after the lock is let go, and the teammate the first of them was handed to
    as it was made ("" for none; see :attr:`hand_first`): the hook through which the
    supervisor wakes an idle teammate for each. Without it nobody is woken; the fallback
    poll finds them.

    ``hand_first``, when set, names under the list's lock the teammate a new claimable task
    is handed to as it is made: written already claimed for it, as the supervisor's
    hand-out writes one, so that teammate, rung with the id, starts it without a claim of
    its own (a lock and a rewrite on its side). The caller rings it and tells the
    supervisor, which gives the task back if that teammate turns out to be gone."""

    hand_first: Callable[[], str] | None = None

    def __init__(
        self,
        root: str | os.PathLike[str] | None,
        team: str,
        on_ready: Ready | None = None,
    ) -> None:
        self._bind(TeamPaths(root, team), on_ready, None)

    @classmethod
    def at(
        cls,
        paths: TeamPaths,
        *,
        on_ready: Ready | None = None,
        messenger: Messenger | None = None,
    ) -> TaskList:
        """The task list of the team of ``paths``. Assignments go out through ``messenger``
        (which rings the new owner's doorbell when it has one)."""
        tasks = cls.__new__(cls)
        tasks._bind(paths, on_ready, messenger)
        return tasks

    def _bind(
        self,
        paths: TeamPaths,
        on_ready: Ready | None,
        messenger: Messenger | None,
    ) -> None:
        self._bind_reads(paths)
        self.on_ready = on_ready
        self._messenger = messenger

    @property
    def messenger(self) -> Messenger:
        if self._messenger is None:
            from ipc.messaging import Messenger

            self._messenger = Messenger.at(self.paths)
        return self._messenger

    def _ready(self, ids: builtins.list[str], handed: str = "") -> None:
        if not ids or self.on_ready is None:
            return
        if handed:
            self.on_ready(ids, handed)
        else:
            self.on_ready(ids)  # a hook that takes the ids alone does too

    # ------------------------------------------------------------ writing

    def _graph(self) -> TaskGraph:
        return TaskGraph(self.team, self._get_or_none)

    def _next_id(self) -> str:
        self.window.find_top()  # past every file and the mark: ids are never reused
        return str(self.window.top + 1)

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
        """Create a pending task with the next id (ids are never reused) and, under the same
        lock, its dependencies: no one can see it without its blockers. With ``owner`` it is
        that member's from the start (no idle teammate can claim it first), and the owner is
        sent a ``task_assignment`` as :meth:`change` sends one."""
        specs = [(subject, description, active_form, metadata, list(blocked_by))]
        return self.create_many(specs, owner=owner, by=by)[0]

    def create_many(
        self,
        specs: Iterable[tuple[str, str, str | None, dict[str, Any] | None, builtins.list[str]]],
        *,
        owner: str | None = None,
        by: str = LEAD_NAME,
    ) -> builtins.list[Task]:
        """Create several tasks and their dependencies in one locked pass. ``blocked_by``
        entries name existing task ids, or ``@N`` for the N-th task of this batch."""
        specs = builtins.list(specs)
        self._require_team()
        owner = self._checked_owner(specs, owner)
        with self._locked() as guard:
            first = int(self._next_id())
            ids = [str(first + i) for i in range(len(specs))]
            graph = self._graph()
            for task_id, (subject, description, active_form, metadata, _) in zip(ids, specs, strict=True):
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
                    graph.link(
                        blocker=ids[int(dep[1:]) - 1] if dep.startswith("@") else str(dep), blocked=task_id
                    )
            handed = "" if owner else self._hand_first(graph, ids)
            # Task files first, then the mark: a crash between leaves files whose ids the
            # next create sees in the directory, so no id is ever issued twice.
            for task_id in ids:
                self._write(guard, graph.nodes[task_id])
            for task_id, task in graph.changed.items():
                if task_id not in ids:
                    self._write(guard, task)
            rewrite(self.mark_path, ids[-1].encode(), grow=False)
            created = [graph.nodes[i] for i in ids]
        self._created(created, owner, by, handed)
        make_spare(self.dir)  # for the next create, now that whoever it wakes is woken
        return created

    def _checked_owner(
        self,
        specs: builtins.list[tuple[str, str, str | None, dict[str, Any] | None, builtins.list[str]]],
        owner: str | None,
    ) -> str:
        """The specs and the owner checked before an id is issued: the owner normalised
        ("" for none), a member of the team (an assignment must reach a real inbox)."""
        for subject, description, _, metadata, _ in specs:
            check_text(subject, description)
            if metadata is not None and not isinstance(metadata, dict):
                raise InvalidInput(f"task metadata must be a JSON object, not {type(metadata).__name__}")
        if not owner:
            return ""
        owner = normalise_agent_name(owner)
        self._require_member(owner)
        return owner

    def _hand_first(self, graph: TaskGraph, ids: builtins.list[str]) -> str:
        """Under the lock: the first claimable task of ``ids`` made already claimed for the
        teammate :attr:`hand_first` names (it is then the first id told to ``on_ready``)."""
        first = next((i for i in ids if not graph.nodes[i].blocked_by), None)
        name = self.hand_first() if first is not None and self.hand_first is not None else ""
        if name and first is not None:
            graph.put(msgspec.structs.replace(graph.nodes[first], owner=name, status="in_progress"))
        return name

    def _created(self, created: builtins.list[Task], owner: str, by: str, handed: str = "") -> None:
        """After the lock: the owner hears of its tasks, or idle teammates of claimable ones
        (the first of them already ``handed`` to that teammate, if one was named)."""
        if owner:
            if owner != by:
                for task in created:
                    self._send_assignment(task, assigned_by=by)
            return
        self._ready([t.id for t in created if not t.blocked_by], handed)  # the handed one first

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
        remove_blocks: Iterable[str] | None = None,
        remove_blocked_by: Iterable[str] | None = None,
        metadata: dict[str, Any] | None = None,
        by: str = LEAD_NAME,
    ) -> Task | None:
        """Merge the given fields into the task; returns it, or None when status='deleted'.
        See :meth:`change` for the rules."""
        return self.change(
            task_id,
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
            by=by,
        ).task

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
        """Update a task and say which tasks it made claimable; the rules are in
        :mod:`ipc.task_edit`. Setting the owner to an agent other than ``by`` sends that agent
        a ``task_assignment``."""
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
            return Change(None, self.delete(task_id))  # delete tells on_ready itself
        if edit.owner:
            self._require_member(edit.owner)  # an assignment must reach a real inbox
        with self._locked() as guard:
            graph = self._graph()
            graph.nodes[task_id] = self._read(task_id)  # a damaged file is named, not "missing"
            result, unblocked, previous_owner = task_edit.apply(graph, task_id, edit, self)
            for item in graph.changed.values():
                self._write(guard, item)
        if edit.owner and edit.owner != previous_owner and edit.owner != by:
            self._send_assignment(result, assigned_by=by)
        self._ready(unblocked)
        return Change(result, unblocked)

    def _require_member(self, name: str) -> None:
        store = self.messenger.store
        if store.exists():
            store.require_member(name)

    def _send_assignment(self, task: Task, *, assigned_by: str) -> None:
        """The new owner hears of it in its inbox, and is woken, as any message wakes."""
        body = TaskAssignment(
            task_id=task.id,
            subject=task.subject,
            description=task.description,
            assigned_by=assigned_by,
            timestamp=now_iso(),
        )
        if task.owner_name is not None:
            self.messenger.deliver_body(assigned_by, task.owner_name, body)

    def delete(self, task_id: str) -> builtins.list[str]:
        """Remove the task and every reference to it; its id is never issued again.
        Returns the tasks its removal made claimable."""
        task_id = str(task_id)
        with self._locked() as guard:
            graph = self._graph()
            graph.nodes[task_id] = self._read(task_id)
            dependents = graph.detach(task_id)
            task_edit.forget_in_records(graph, task_id, self._ids())
            for other in graph.changed.values():
                if other.id != task_id:
                    self._write(guard, other)
            unblocked = [t.id for t in dependents if self.is_claimable(t)]
            # A create killed between its task file and the mark leaves the mark behind; once
            # the file is gone only the mark remembers the id, so raise it first.
            if self._highwatermark() < int(task_id):
                rewrite(self.mark_path, task_id.encode(), grow=False)
            guard.also(self._task_path(task_id))
            os.unlink(self._task_path(task_id))
            self._cache.pop(task_id, None)
        self._ready(unblocked)
        return unblocked
