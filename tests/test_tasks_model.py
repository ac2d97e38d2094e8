"""Hypothesis state machine: the task list against a simple in-memory model."""

from __future__ import annotations

import tempfile
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ipc import Conflict, NotFound, TaskList, TeamConfigStore

AGENTS = ["a1", "a2", "a3"]


class TaskListMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        store = TeamConfigStore(Path(self.tmp.name), "m")
        store.create()
        for a in AGENTS:
            store.add_member(a)
        self.tl = TaskList(Path(self.tmp.name), "m")
        self.issued: list[str] = []
        self.deleted: set[str] = set()
        self.status: dict[str, str] = {}
        self.owner: dict[str, str | None] = {}
        self.blockers: dict[str, set[str]] = {}

    def teardown(self) -> None:
        self.tmp.cleanup()

    def live(self) -> list[str]:
        return [i for i in self.issued if i not in self.deleted]

    @rule()
    def create(self) -> None:
        task = self.tl.create(f"t{len(self.issued)}")
        assert task.id not in self.issued
        self.issued.append(task.id)
        self.status[task.id] = "pending"
        self.owner[task.id] = None
        self.blockers[task.id] = set()

    def reaches(self, start: str, goal: str) -> bool:
        # start reaches goal following "blocks" edges: x blocks y iff x in blockers[y]
        stack, seen = [start], set()
        while stack:
            cur = stack.pop()
            if cur == goal:
                return True
            if cur in seen:
                continue
            seen.add(cur)
            stack.extend(y for y, bs in self.blockers.items() if cur in bs and y not in self.deleted)
        return False

    @precondition(lambda self: len(self.live()) >= 2)
    @rule(data=st.data())
    def add_dependency(self, data: st.DataObject) -> None:
        blocker = data.draw(st.sampled_from(self.live()))
        blocked = data.draw(st.sampled_from(self.live()))
        expect_cycle = blocker == blocked or (
            self.status[blocker] != "completed" and self.reaches(blocked, blocker)
        )
        try:
            self.tl.update(blocked, add_blocked_by=[blocker])
        except Conflict:
            assert expect_cycle
            return
        assert not expect_cycle
        if self.status[blocker] != "completed":
            self.blockers[blocked].add(blocker)

    @precondition(lambda self: bool(self.issued))
    @rule(data=st.data(), agent=st.sampled_from(AGENTS), busy=st.booleans())
    def claim(self, data: st.DataObject, agent: str, busy: bool) -> None:
        tid = data.draw(st.sampled_from(self.issued))
        result = self.tl.claim(tid, agent, check_agent_busy=busy)
        if tid in self.deleted:
            expected = "task_not_found"
        elif self.owner[tid] not in (None, agent):
            expected = "already_claimed"
        elif self.status[tid] == "completed":
            expected = "already_resolved"
        elif any(self.status[b] != "completed" for b in self.blockers[tid] if b not in self.deleted):
            expected = "blocked"
        elif busy and any(
            self.owner[o] == agent and self.status[o] == "in_progress" and o != tid for o in self.live()
        ):
            expected = "agent_busy"
        else:
            expected = None
        assert result.reason == expected
        if result.success:
            self.owner[tid], self.status[tid] = agent, "in_progress"

    @precondition(lambda self: bool(self.live()))
    @rule(data=st.data())
    def complete(self, data: st.DataObject) -> None:
        tid = data.draw(st.sampled_from(self.live()))
        self.tl.update(tid, status="completed")
        self.status[tid] = "completed"
        for bs in self.blockers.values():  # its dependents stop waiting; it keeps its own edges
            bs.discard(tid)

    @precondition(lambda self: any(self.status[t] == "completed" for t in self.live()))
    @rule(data=st.data())
    def reopen(self, data: st.DataObject) -> None:
        tid = data.draw(st.sampled_from([t for t in self.live() if self.status[t] == "completed"]))
        self.tl.update(tid, status="pending")
        self.status[tid] = "pending"  # the work that went ahead is not held up again

    @precondition(lambda self: bool(self.live()))
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        tid = data.draw(st.sampled_from(self.live()))
        self.tl.delete(tid)
        self.deleted.add(tid)
        for bs in self.blockers.values():
            bs.discard(tid)
        try:
            self.tl.get(tid)
            raise AssertionError("deleted task still readable")
        except NotFound:
            pass

    @invariant()
    def matches_model_and_is_symmetric(self) -> None:
        tasks = {t.id: t for t in self.tl.list()}
        assert set(tasks) == set(self.live())
        for tid, task in tasks.items():
            assert set(task.blocked_by) == self.blockers[tid]
            assert task.status == self.status[tid]
            assert task.owner_name == self.owner[tid]
            for b in task.blocked_by:
                assert tid in tasks[b].blocks
            for d in task.blocks:  # a completed task keeps the record of what it blocked
                assert tid in tasks[d].blocked_by or task.status == "completed"
        for tid in tasks:  # no cycles among the edges in force
            if tasks[tid].status == "completed":
                continue
            for b in tasks[tid].blocks:
                assert not self.reaches(b, tid), f"cycle through #{tid} and #{b}"


TestTaskList = TaskListMachine.TestCase
TestTaskList.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
