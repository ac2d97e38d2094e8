"""The dependency edges of the task list, edited by one mutation (under the task-list lock).

A :class:`TaskGraph` reads tasks lazily, by id, as an edit needs them, and remembers what
it changed, so a mutation reads and writes only the tasks it touches: adding a dependency
reads the two ends and the tasks on the way of the cycle check; completing or deleting a
task reads its neighbours. Both sides of an edge always change together (if 4 is blocked
by 1, then 1 blocks 4), except that a completed task keeps the record of what it blocked
while its dependents stop waiting for it.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from ipc.errors import Conflict, InvalidInput, NotFound
from ipc.schemas import Task


class TaskGraph:
    def __init__(self, team: str, read: Callable[[str], Task | None]) -> None:
        self.team = team
        self._read = read
        self.nodes: dict[str, Task] = {}
        self.changed: dict[str, Task] = {}

    def get(self, task_id: str) -> Task | None:
        if task_id not in self.nodes:
            task = self._read(task_id)
            if task is None:
                return None
            self.nodes[task_id] = task
        return self.nodes[task_id]

    def put(self, task: Task) -> None:
        self.nodes[task.id] = self.changed[task.id] = task

    def link(self, *, blocker: str, blocked: str) -> None:
        """``blocked`` waits for ``blocker``. Refused (Conflict/NotFound) when either is
        missing or the edge would make a cycle; a completed blocker adds nothing."""
        ends = [self.get(blocker), self.get(blocked)]
        for tid, task in zip((blocker, blocked), ends, strict=True):
            if task is None:
                raise NotFound(f"task #{tid} does not exist in team {self.team!r}; cannot add the dependency")
        a, b = ends
        assert a is not None and b is not None
        if blocker == blocked:
            raise Conflict(f"task #{blocker} cannot block itself")
        if a.status == "completed":
            return  # a completed blocker is already satisfied: nothing to wait for
        if self.reaches(start=blocked, goal=blocker):
            raise Conflict(
                f"task #{blocked} blocked by #{blocker} would make a dependency cycle "
                f"(#{blocked} already leads to #{blocker})"
            )
        if blocked not in a.blocks:
            self.put(msgspec.structs.replace(a, blocks=[*a.blocks, blocked]))
        b = self.nodes[blocked]
        if blocker not in b.blocked_by:
            self.put(msgspec.structs.replace(b, blocked_by=[*b.blocked_by, blocker]))

    def unlink(self, *, blocker: str, blocked: str) -> None:
        """``blocked`` no longer waits for ``blocker``; refused (InvalidInput) if it did not.
        A blocker that no longer exists is dropped from ``blocked``'s side alone."""
        b = self.get(blocked)
        if b is None:
            raise NotFound(f"task #{blocked} does not exist in team {self.team!r}")
        if blocker not in b.blocked_by:
            waits = ", ".join(f"#{x}" for x in b.blocked_by) or "nothing"
            raise InvalidInput(f"task #{blocked} is not blocked by #{blocker}; it waits for {waits}")
        self.put(msgspec.structs.replace(b, blocked_by=[x for x in b.blocked_by if x != blocker]))
        a = self.get(blocker)
        if a is not None and blocked in a.blocks:
            self.put(msgspec.structs.replace(a, blocks=[x for x in a.blocks if x != blocked]))

    def reaches(self, *, start: str, goal: str) -> bool:
        """True if ``goal`` is reachable from ``start`` by following ``blocks`` edges (a
        completed task blocks nothing any more, though it keeps the record)."""
        seen, stack = set(), [start]
        while stack:
            current = stack.pop()
            if current == goal:
                return True
            if current in seen:
                continue
            seen.add(current)
            node = self.get(current)
            if node is not None and node.status != "completed":
                stack.extend(node.blocks)
        return False

    def complete(self, task_id: str) -> list[Task]:
        """``task_id`` completed: its dependents stop waiting for it. It keeps its own
        ``blocks`` as the record of what it held up (as Claude Code does). Returns the
        dependents as they are now."""
        dependents = []
        for other_id in self.nodes[task_id].blocks:
            other = self.get(other_id)
            if other is None:
                continue
            if task_id in other.blocked_by:
                other = msgspec.structs.replace(
                    other, blocked_by=[x for x in other.blocked_by if x != task_id]
                )
                self.put(other)
            dependents.append(other)
        return dependents

    def reopen(self, task_id: str) -> None:
        """A completed task set back to pending keeps only the edges still in force: work
        that went ahead once it completed is not held up again."""
        me = self.nodes[task_id]
        kept = [d for d in me.blocks if (other := self.get(d)) is not None and task_id in other.blocked_by]
        if kept != me.blocks:
            self.put(msgspec.structs.replace(me, blocks=kept))

    def detach(self, task_id: str) -> list[Task]:
        """Remove every edge of ``task_id`` from both sides (done when it is deleted);
        returns its former dependents as they are now."""
        me = self.nodes[task_id]
        dependents = []
        for other_id in dict.fromkeys([*me.blocks, *me.blocked_by]):
            other = self.get(other_id)
            if other is None or task_id not in (*other.blocks, *other.blocked_by):
                continue
            other = msgspec.structs.replace(
                other,
                blocks=[x for x in other.blocks if x != task_id],
                blocked_by=[x for x in other.blocked_by if x != task_id],
            )
            self.put(other)
            if other_id in me.blocks:
                dependents.append(other)
        self.put(msgspec.structs.replace(me, blocks=[], blocked_by=[]))
        return dependents
