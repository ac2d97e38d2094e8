"""One change to a task, as both task lists make it (the files' :class:`~ipc.tasks.TaskList`
and the engine's): the request checked before anything is read or locked
(:meth:`TaskEdit.checked`), then computed on a :class:`~ipc.task_graph.TaskGraph` of the
tasks as read (:func:`apply`), which the task list writes back its own way.

The rules: ``owner=""`` clears the owner; ``metadata: {key: None}`` deletes the key; setting
``pending`` clears a recorded failure (a retry); dependencies stay symmetric, and one on a
missing task, one that would make a cycle, or removing one that is not there is refused with
nothing changed; a task starts (``in_progress``) only once its blockers are completed, and a
completed task goes back to ``pending`` (reopened), never to ``in_progress``; completing a
task frees its dependents and keeps its own ``blocks`` as the record, as Claude Code does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import msgspec
from msgspec import UNSET

from ipc.errors import Conflict, InvalidInput, NotFound
from ipc.paths import normalise_agent_name
from ipc.schemas import Task
from ipc.task_graph import TaskGraph
from ipc.task_rules import RUNNER_CRASHES, STATUSES, check_metadata, check_text


class Reads(Protocol):
    """What an edit needs to know of tasks it does not write: their state now."""

    def open_blockers(self, task: Task) -> list[str]: ...

    def is_claimable(self, task: Task) -> bool: ...


@dataclass(frozen=True)
class TaskEdit:
    status: str | None = None
    subject: str | None = None
    description: str | None = None
    active_form: str | None = None
    owner: str | None = None  # normalised; "" clears it
    add_blocks: tuple[str, ...] = ()
    add_blocked_by: tuple[str, ...] = ()
    remove_blocks: tuple[str, ...] = ()
    remove_blocked_by: tuple[str, ...] = ()
    metadata: dict[str, Any] | None = None

    @classmethod
    def checked(
        cls,
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
    ) -> TaskEdit:
        """The request, or InvalidInput naming what is wrong (before anything is read)."""
        if status is not None and status not in STATUSES:
            raise InvalidInput(f"task status {status!r} is not one of {', '.join(STATUSES)}")
        check_metadata(metadata)
        if subject is not None or description is not None or active_form is not None:
            check_text(subject if subject is not None else "x", description, active_form)
        edit = cls(
            status=status,
            subject=subject,
            description=description,
            active_form=active_form,
            owner=None if owner is None else (normalise_agent_name(owner) if owner else ""),
            add_blocks=tuple(str(t) for t in add_blocks or ()),
            add_blocked_by=tuple(str(t) for t in add_blocked_by or ()),
            remove_blocks=tuple(str(t) for t in remove_blocks or ()),
            remove_blocked_by=tuple(str(t) for t in remove_blocked_by or ()),
            metadata=metadata,
        )
        if edit == cls():  # it would rewrite the task as it is and tell everyone it changed
            raise InvalidInput(
                "nothing to change: give a status, subject, description, active form, owner, "
                "metadata, or dependencies to add or remove"
            )
        return edit


def check_start(task: Task, reads: Reads, graph: TaskGraph) -> None:
    """Conflict, naming the rule or the blockers, for a task that may not start now."""
    if task.status == "completed":
        raise Conflict(
            f"task #{task.id} is completed; a completed task does not go back to in_progress "
            "(set it to pending to reopen it)"
        )
    open_blockers = reads.open_blockers(task)
    if open_blockers:
        named = ", ".join(f"#{b} ({blocker.status})" for b in open_blockers if (blocker := graph.get(b)))
        them = "it is" if len(open_blockers) == 1 else "they are"
        raise Conflict(f"task #{task.id} is blocked by {named}; it can start once {them} completed")


class Applied(NamedTuple):
    task: Task  # as it becomes
    unblocked: list[str]  # the tasks the change made claimable
    previous_owner: str | None
    # Tasks with an owner the change freed of their last open blocker: the owner is told
    # again (no one claims a task that has an owner, so no one else would start it).
    owned_freed: list[Task]


def apply(graph: TaskGraph, task_id: str, edit: TaskEdit, reads: Reads) -> Applied:
    """Make ``edit`` to task ``task_id`` on ``graph``."""
    task = graph.get(task_id)
    if task is None:
        raise NotFound(f"task #{task_id} does not exist in team {graph.team!r}")
    previous_owner = task.owner_name
    # Who this task holds up now, and which of the blockers it is to lose are open: what the
    # edit can free (a completed blocker holds no one).
    holds = held_up_by(graph, task)
    opened = [
        b for b in edit.remove_blocked_by if (n := graph.get(b)) is not None and n.status != "completed"
    ]
    for other in edit.add_blocks:
        graph.link(blocker=task_id, blocked=other)
    for other in edit.add_blocked_by:
        graph.link(blocker=other, blocked=task_id)
    for other in edit.remove_blocks:
        graph.unlink(blocker=task_id, blocked=other)
    for other in edit.remove_blocked_by:
        graph.unlink(blocker=other, blocked=task_id)
    task = graph.nodes[task_id]
    status = edit.status
    if status == "in_progress" and task.status != "in_progress":
        check_start(task, reads, graph)
    reopened = status == "pending" and task.status == "completed"
    fields: dict[str, Any] = {}
    for name in ("subject", "description", "active_form"):
        if getattr(edit, name) is not None:
            fields[name] = getattr(edit, name)
    if edit.owner is not None:
        fields["owner"] = edit.owner or UNSET
    meta = dict(task.meta)
    if edit.metadata is not None:
        meta.update(edit.metadata)
    if status == "pending" and "lastError" not in (edit.metadata or {}):
        meta.pop("lastError", None)  # a retry; unless this release records a failure
        meta.pop(RUNNER_CRASHES, None)
    if status is not None:
        fields["status"] = status
    if edit.metadata is not None or (status == "pending" and "lastError" in task.meta):
        kept = {k: v for k, v in meta.items() if v is not None}
        if any(v is not None and k != "lastError" for k, v in (edit.metadata or {}).items()):
            # Measured as it would be left; a deletion, or the failure record a give-back or
            # a release writes (cut to 2,000 characters), never stops the update that makes it.
            check_metadata(kept, before=task.meta)
        fields["metadata"] = kept or UNSET
    graph.put(msgspec.structs.replace(task, **fields))
    if reopened:
        graph.reopen(task_id)
    candidates = [graph.nodes[t] for t in edit.remove_blocks]
    if edit.remove_blocked_by or status == "pending":
        candidates.append(graph.nodes[task_id])  # freed, released or retried: claimable again?
    if status == "completed":
        candidates += graph.complete(task_id)
    unblocked = list(dict.fromkeys(t.id for t in candidates if reads.is_claimable(t)))
    freed = [t for t in holds if status == "completed" or t in edit.remove_blocks]
    if opened:  # it lost an open blocker: free now, if that was its last
        freed.append(task_id)
    return Applied(graph.nodes[task_id], unblocked, previous_owner, owned_and_ready(graph, freed, reads))


def held_up_by(graph: TaskGraph, blocker: Task) -> list[str]:
    """The tasks ``blocker`` holds up now: those it blocks that list it among their blockers
    (a completed task holds no one)."""
    if blocker.status == "completed":
        return []
    return [t for t in blocker.blocks if (n := graph.get(t)) is not None and blocker.id in n.blocked_by]


def owned_and_ready(graph: TaskGraph, ids: Iterable[str], reads: Reads) -> list[Task]:
    """Of tasks ``ids`` (as ``graph`` has them now), those with an owner that can start."""
    tasks = (graph.nodes[t] for t in dict.fromkeys(ids) if t in graph.nodes)
    return [
        t
        for t in tasks
        if t.status == "pending" and t.owner_name is not None and not t.failed and not reads.open_blockers(t)
    ]


def forget_in_records(graph: TaskGraph, task_id: str, ids: Iterable[str]) -> None:
    """A deleted task out of completed tasks' ``blocks`` (it no longer names them, so only a
    look at every task finds them: a delete is rare, and a person's)."""
    for other_id in ids:
        other = graph.get(other_id)
        if other_id != task_id and other is not None and task_id in other.blocks:
            graph.put(msgspec.structs.replace(other, blocks=[x for x in other.blocks if x != task_id]))
