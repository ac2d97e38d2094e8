"""The shared task list: ``tasks/{team}/{id}.json``, one file per task.

Every mutation holds the task-list lock (``tasks/{team}/.lock``, plus Claude Code's lock of
each task file it writes, in a Claude Code root) for its whole read-check-write, so a claim
is atomic and dependency edges change on both sides together. A mutation reads only the
files it needs: a claim reads the task and its blockers, a completion the task and the
tasks it blocks. Reads take no lock; parsed files are cached against their identity.

A task that failed (``metadata.lastError``) is not claimed again automatically: it waits,
shown as failed, until someone sets it back to pending (which clears the error) or assigns
it. Fields other writers keep in a task file survive every rewrite.

Reading is in :mod:`ipc.task_reads`, rules that need no files in :mod:`ipc.task_rules`, the
graph in :mod:`ipc.task_graph`, what hot paths look at in :mod:`ipc.task_window`.
"""

from __future__ import annotations

import builtins
import itertools
import os
import random
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET

from ipc import task_edit, task_notices
from ipc.errors import AgentTeamsError
from ipc.locks import Guard, locked
from ipc.paths import TeamPaths, normalise_agent_name
from ipc.preserve import merged, read_object
from ipc.schemas import LEAD_NAME, Task, dump_json
from ipc.storage import create as create_file
from ipc.storage import ensure_dir, make_spare, read_bytes, rewrite
from ipc.task_edit import TaskEdit
from ipc.task_graph import TaskGraph
from ipc.task_reads import TaskReads
from ipc.task_rules import Change, ClaimResult, check_metadata, check_text, released_metadata

if TYPE_CHECKING:
    from ipc.messaging import Messenger

_decoder = msgspec.json.Decoder(Task)

SPREAD = 64  # claimable tasks a claimer that lost a race picks among

ReadyHook = Callable[[builtins.list[str], str], None]  # ids made claimable; whom a create rang ahead


class TaskList(TaskReads):
    """``on_ready`` hears of the tasks a change made claimable (created, unblocked, released)
    after the lock is let go: the hook through which the supervisor wakes an idle teammate
    for each (without it, the fallback poll finds them). ``ring_ahead`` hears, under the lock
    and before the file is written, of the task a create of one claimable task makes (not a
    batch: its teammate would wait out every file); its maker rings a teammate, whose wake-up
    overlaps the write (the claim waits on the lock: :meth:`claim_next`), and says whom.
    ``prime_ring`` is called before that lock is taken, once the create's input is checked."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None,
        team: str,
        on_ready: ReadyHook | None = None,
    ) -> None:
        self._bind(TeamPaths(root, team), on_ready, None)

    @classmethod
    def at(
        cls,
        paths: TeamPaths,
        *,
        on_ready: ReadyHook | None = None,
        messenger: Messenger | None = None,
    ) -> TaskList:
        """The task list of the team of ``paths``. Assignments go out through ``messenger``
        (which rings the new owner's doorbell when it has one)."""
        tasks = cls.__new__(cls)
        tasks._bind(paths, on_ready, messenger)
        return tasks

    def _bind(self, paths: TeamPaths, on_ready: ReadyHook | None, messenger: Messenger | None) -> None:
        self._bind_reads(paths)
        self.on_ready = on_ready
        self.ring_ahead: Callable[[str], str] | None = None
        self.prime_ring: Callable[[], None] | None = None
        self._messenger = messenger

    @property
    def messenger(self) -> Messenger:
        if self._messenger is None:
            from ipc.messaging import Messenger

            self._messenger = Messenger.at(self.paths)
        return self._messenger

    def _ready(self, ids: builtins.list[str], rung: str = "") -> None:
        if ids and self.on_ready is not None:
            self.on_ready(ids, rung)

    # ------------------------------------------------------------ writing

    @contextmanager
    def _locked(self) -> Iterator[Guard]:
        ensure_dir(self.dir)
        with locked(self.lock_path, root=self.paths.root) as guard:
            yield guard

    def _graph(self) -> TaskGraph:
        return TaskGraph(self.team, self._get_or_none)

    def _write(self, guard: Guard, task: Task) -> None:
        path = self._task_path(task.id)
        guard.also(path)  # Claude Code's per-task lock, in a Claude Code root
        data = read_bytes(path)
        if data is None:
            create_file(path, dump_json(task))
        else:  # in place: see ipc.storage.rewrite
            rewrite(path, dump_json(merged(read_object(data), task)))
        self._cache.pop(task.id, None)
        self.window.reopened(task)

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
        # What a ring ahead will need, made before the lock is taken: for one task with no
        # owner and no blockers (a blocked one is not rung ahead, and may be refused under the lock).
        if self.prime_ring and self.ring_ahead and len(specs) == 1 and not owner and not specs[0][4]:
            self.prime_ring()
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
            only, rung = graph.nodes[ids[0]], ""
            if self.ring_ahead is not None and len(ids) == 1 and not owner and self.is_claimable(only):
                rung = self.ring_ahead(only.id)
            # Task files first, then the mark: a crash between leaves files whose ids the
            # next create sees in the directory, so no id is ever issued twice.
            for task_id in ids:
                self._write(guard, graph.nodes[task_id])
            for task_id, task in graph.changed.items():
                if task_id not in ids:
                    self._write(guard, task)
            rewrite(self.mark_path, ids[-1].encode(), grow=False)
            created = [graph.nodes[i] for i in ids]
        self._created(created, owner, by, rung)
        make_spare(self.dir)  # for the next create, now that whoever it wakes is woken
        return created

    def _checked_owner(
        self,
        specs: builtins.list[tuple[str, str, str | None, dict[str, Any] | None, builtins.list[str]]],
        owner: str | None,
    ) -> str:
        """The specs and the owner checked before an id is issued: the owner normalised
        ("" for none), a member of the team (an assignment must reach a real inbox)."""
        for subject, description, active_form, metadata, _ in specs:
            check_text(subject, description, active_form)
            check_metadata(metadata)
        if not owner:
            return ""
        owner = normalise_agent_name(owner)
        self._require_member(owner)
        return owner

    def _created(self, created: builtins.list[Task], owner: str, by: str, rung: str) -> None:
        """After the lock: the owner hears of its tasks, or idle teammates of claimable ones."""
        if owner:
            if owner != by:
                for task in created:
                    task_notices.send_assignment(self.messenger, task, assigned_by=by)
            return
        self._ready([t.id for t in created if self.is_claimable(t)], rung)

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
        """Merge the given fields into the task: it as it becomes, None if deleted (:meth:`change`)."""
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
        """Update a task and say which tasks it made claimable (rules: :mod:`ipc.task_edit`); a new
        owner other than ``by``, and the owner of a task it freed, are sent a ``task_assignment``."""
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
            return Change(None, self.delete(task_id, by=by))  # delete tells on_ready itself
        if edit.owner:
            self._require_member(edit.owner)  # an assignment must reach a real inbox
        with self._locked() as guard:
            graph = self._graph()
            graph.nodes[task_id] = self._read(task_id)  # a damaged file is named, not "missing"
            applied = task_edit.apply(graph, task_id, edit, self)
            for item in graph.changed.values():
                self._write(guard, item)
        return self._tell(applied, edit, by)

    def _tell(self, applied: task_edit.Applied, edit: task_edit.TaskEdit, by: str) -> Change:
        """An update made is told to a new owner, the owners of tasks it freed, and on_ready."""
        if edit.owner and edit.owner != applied.previous_owner and edit.owner != by:
            task_notices.send_assignment(self.messenger, applied.task, assigned_by=by)
        task_notices.tell_freed(self.messenger, applied.owned_freed, by)
        self._ready(applied.unblocked)
        return Change(applied.task, applied.unblocked)

    def _require_member(self, name: str) -> None:
        store = self.messenger.store
        if store.exists():
            store.require_member(name)

    def delete(self, task_id: str, by: str = LEAD_NAME) -> builtins.list[str]:
        """Remove the task and every reference to it; its id is never issued again.
        Returns the tasks its removal made claimable; owners of tasks it freed are told."""
        task_id = str(task_id)
        with self._locked() as guard:
            graph = self._graph()
            graph.nodes[task_id] = self._read(task_id)
            holds = task_edit.held_up_by(graph, graph.nodes[task_id])
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
            freed = task_edit.owned_and_ready(graph, holds, self)
        task_notices.tell_freed(self.messenger, freed, by)
        self._ready(unblocked)
        return unblocked

    def claim(self, task_id: str, agent: str, *, check_agent_busy: bool = False) -> ClaimResult:
        """Make ``agent`` the owner and set ``in_progress``, atomically; or say why not."""
        agent = normalise_agent_name(agent)
        if not re.fullmatch(r"[0-9]{1,12}", str(task_id)):
            return ClaimResult(success=False, reason="task_not_found")
        with self._locked() as guard:
            return self._claim_locked(guard, str(task_id), agent, check_agent_busy)

    def _claim_locked(self, guard: Guard, task_id: str, agent: str, check_agent_busy: bool) -> ClaimResult:
        task = self._get_or_none(task_id)
        if task is None:
            return ClaimResult(success=False, reason="task_not_found")
        if task.owner_name is not None and task.owner_name != agent:
            return ClaimResult(success=False, reason="already_claimed", task=task)
        if task.status == "completed":
            return ClaimResult(success=False, reason="already_resolved", task=task)
        if self.open_blockers(task):
            return ClaimResult(success=False, reason="blocked", task=task)
        if check_agent_busy and any(
            t.owner_name == agent and t.status == "in_progress" and t.id != task_id
            for t in self.window.live()
        ):
            return ClaimResult(success=False, reason="agent_busy", task=task)
        claimed = msgspec.structs.replace(task, owner=agent, status="in_progress")
        self._write(guard, claimed)
        return ClaimResult(success=True, task=claimed)

    def claim_next(self, agent: str, hint: str = "") -> Task | None:
        """Auto-claim for ``agent``: the task ``hint`` if it can be had, else the lowest
        claimable task. The search runs without the lock; the claim under it reads only the
        candidate and its blockers. After losing a race, one of the lowest few claimable
        tasks, at random: hundreds of claimers that all went for the lowest again would
        each win one round in hundreds."""
        agent = normalise_agent_name(agent)
        if hint:
            candidate = self._get_or_none(hint)
            if candidate is None:  # rung ahead of its file (see ring_ahead): there once the lock is had
                with self._locked() as guard:
                    if (current := self._get_or_none(hint)) is not None and self.is_claimable(current):
                        result = self._claim_locked(guard, hint, agent, check_agent_busy=False)
                        if result.success:
                            return result.task
            elif candidate.owner_name == agent and candidate.status == "in_progress":
                return candidate  # handed out: claimed for this agent (see hand_out)
            elif self.is_claimable(candidate):
                result = self.claim(hint, agent)
                if result.success:
                    return result.task
        for attempt in range(8):  # another claimer may win a candidate: try another
            pool = list(itertools.islice(self._claimables(), 1 if attempt == 0 else SPREAD))
            if not pool:
                return None
            candidate = random.choice(pool)
            with self._locked() as guard:
                current = self._get_or_none(candidate.id)
                if current is None or not self.is_claimable(current):
                    continue
                result = self._claim_locked(guard, candidate.id, agent, check_agent_busy=False)
            if result.success:
                return result.task
        return None

    def hand_out(self, pairs: builtins.list[tuple[str, str]]) -> builtins.list[tuple[str, str]]:
        """Claim each task for its agent, ``(task id, agent)``, in one locked pass (the
        supervisor hands out claims, so hundreds of idle teammates do not queue on the lock);
        the pairs claimed. A task no longer claimable is skipped; only the list's own lock
        raises (nothing written): a crowded per-task lock (Claude Code's) ends the pass with what
        it did, and the rest is left to the teammates' own look."""
        done: builtins.list[tuple[str, str]] = []
        with self._locked() as guard:
            for task_id, agent in pairs:
                task = self._get_or_none(task_id)
                if task is not None and self.is_claimable(task):
                    try:
                        self._write(guard, msgspec.structs.replace(task, owner=agent, status="in_progress"))
                    except AgentTeamsError:
                        break
                    done.append((task_id, agent))
        return done

    def release_owner(self, agent: str, *, error: str = "", crash: str = "") -> builtins.list[str]:
        """Put ``agent``'s in_progress tasks back to pending with no owner (after its death,
        or a failed turn); ``error`` and ``crash`` as :func:`released_metadata` records them."""
        agent = normalise_agent_name(agent)
        released: builtins.list[str] = []
        with self._locked() as guard:
            for task in self.window.live():  # an in_progress task is never behind the prefix
                if task.owner_name == agent and task.status == "in_progress":
                    meta = released_metadata(task.meta, error, crash)
                    self._write(
                        guard,
                        msgspec.structs.replace(task, owner=UNSET, status="pending", metadata=meta or UNSET),
                    )
                    released.append(task.id)
        return released
