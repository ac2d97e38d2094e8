"""Who hears of a task change in its inbox (and is woken, as any message wakes): the agent a
task is assigned to, and the owners of tasks a change freed of their last open blocker (no
one claims a task that has an owner, so no one else would start it)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ipc.clock import now_iso
from ipc.errors import AgentTeamsError
from ipc.schemas import Task, TaskAssignment

if TYPE_CHECKING:
    from ipc.messaging import Messenger

log = logging.getLogger("agentteams.tasks")


def send_assignment(messenger: Messenger, task: Task, *, assigned_by: str) -> None:
    """A ``task_assignment`` to the task's owner, from ``assigned_by``."""
    if task.owner_name is None:
        return
    body = TaskAssignment(
        task_id=task.id,
        subject=task.subject,
        description=task.description,
        assigned_by=assigned_by,
        timestamp=now_iso(),
    )
    messenger.deliver_body(assigned_by, task.owner_name, body)


def tell_freed(messenger: Messenger, tasks: list[Task], by: str) -> None:
    """The owners of ``tasks``, freed by ``by``'s change, hear of them again. A notice that
    cannot be sent does not undo the change made: it is logged."""
    for task in tasks:
        try:
            send_assignment(messenger, task, assigned_by=by)
        except AgentTeamsError as exc:
            log.warning(
                "task #%s is free to start; could not tell %s: %s", task.id, task.owner_name, exc.message
            )
