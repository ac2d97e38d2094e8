"""Who holds a task: a claim, the supervisor's hand-out, a handed task given back, a gone
owner's tasks released; and the locked write every change of the task list goes through
(see :mod:`ipc.tasks`)."""

from __future__ import annotations

import builtins
import itertools
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager

import msgspec
from msgspec import UNSET

from ipc.errors import AgentTeamsError
from ipc.locks import Guard, locked
from ipc.paths import normalise_agent_name
from ipc.preserve import merged, read_object
from ipc.schemas import Task, dump_json
from ipc.storage import create as create_file
from ipc.storage import ensure_dir, read_bytes, rewrite
from ipc.task_reads import TaskReads
from ipc.task_rules import ClaimResult

SPREAD = 64  # claimable tasks a claimer that lost a race picks among


class TaskClaims(TaskReads):
    @contextmanager
    def _locked(self) -> Iterator[Guard]:
        ensure_dir(self.dir)
        with locked(self.lock_path, root=self.paths.root) as guard:
            yield guard

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
            if candidate is not None and candidate.owner_name == agent and candidate.status == "in_progress":
                return candidate  # handed out: claimed for this agent (see hand_out)
            if candidate is not None and self.is_claimable(candidate):
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

    def give_back(self, task_id: str, agent: str) -> bool:
        """Put one task handed to ``agent`` back to pending with no owner, if it still is
        ``agent``'s and in progress (it was not told of it)."""
        with self._locked() as guard:
            task = self._get_or_none(task_id)
            if task is None or task.owner_name != normalise_agent_name(agent) or task.status != "in_progress":
                return False
            self._write(guard, msgspec.structs.replace(task, owner=UNSET, status="pending"))
        return True

    def release_owner(self, agent: str, *, error: str = "") -> builtins.list[str]:
        """Put ``agent``'s in_progress tasks back to pending with no owner (after its death,
        or a failed turn); ``error`` is recorded as ``metadata.lastError``."""
        agent = normalise_agent_name(agent)
        released: builtins.list[str] = []
        with self._locked() as guard:
            for task in self.window.live():  # an in_progress task is never behind the prefix
                if task.owner_name == agent and task.status == "in_progress":
                    meta = dict(task.meta)
                    if error:
                        meta["lastError"] = error[-2000:]
                    self._write(
                        guard,
                        msgspec.structs.replace(task, owner=UNSET, status="pending", metadata=meta or UNSET),
                    )
                    released.append(task.id)
        return released
