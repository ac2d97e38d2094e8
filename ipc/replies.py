"""What the supervisor and a lead agent report: a teammate's and a team's status, the
answers to spawn and stop requests, a subagent's result and a lead's."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ipc.launch import Role, WakeMode
from ipc.schemas import PermissionRequest
from ipc.usage import TeamUsage

SubagentStatus = Literal["running", "completed", "failed", "killed"]


class TeammateStatus(msgspec.Struct, kw_only=True):
    """One teammate as the supervisor sees it."""

    name: str
    pid: int | None
    state: str
    task: str = ""
    restarts: int = 0
    incarnation: int = 0
    color: str = ""
    last_exit: str = ""
    backend: str = "process"
    role: Role = "teammate"
    parent: str = ""
    # An in-process teammate (its pid is a number of the supervisor's): the process it is a
    # thread of, and that thread's native id.
    host_pid: int | None = None
    thread: int | None = None


class TeamStatus(msgspec.Struct, kw_only=True):
    team: str
    supervisor: int
    forkserver: int | None
    wake: WakeMode
    started: float
    runtime: str
    lead_pid: int | None = None
    door: int | None = None  # the resident door's program, while it runs
    task_wakes: int = 0  # wakes sent to idle teammates for ready tasks
    lead_checks: int = 0  # looks the supervisor took at the lead's inbox
    lead_check_seconds: float = 0.0  # and the time they took, together
    teammates: list[TeammateStatus] = []

    def teammate(self, name: str) -> TeammateStatus | None:
        return next((t for t in self.teammates if t.name == name), None)


class SpawnReply(msgspec.Struct, kw_only=True):
    name: str
    pid: int | None
    color: str
    state: str
    renamed_from: str = ""  # the name asked for, when it was taken and a suffix was added


class StopReply(msgspec.Struct, kw_only=True):
    name: str
    stopped: bool = True
    exit: str = ""
    worktree: str = ""  # its worktree, kept because it has changes ('agentteams diff' shows them)


class SubagentReply(msgspec.Struct, kw_only=True):
    id: str  # also its agent name
    pid: int | None
    output_file: str


class BubbledAnswer(msgspec.Struct, kw_only=True):
    """A parent's answer to its subagent's permission request (its own, or the lead's)."""

    request_id: str
    approved: bool
    updated_input: dict[str, Any] = {}
    reason: str = ""


class SubagentResult(msgspec.Struct, kw_only=True):
    """``teams/{team}/subagents/{id}.json``: what a subagent came to, for its parent."""

    id: str
    parent: str
    description: str = ""
    prompt: str = ""
    agent_type: str = "general-purpose"
    status: SubagentStatus = "running"
    result: str = ""
    error: str = ""
    background: bool = False
    notified: bool = False  # its parent has been told (a <task-notification> or TaskOutput)
    started_ms: int = 0
    ended_ms: int = 0
    name: str = ""  # the name its parent gave it: SendMessage finds it by it
    tool_use_id: str = ""  # the parent's Agent call that started (or resumed) it
    inbox: list[str] = []  # messages from its parent for its next turn
    tokens: int = 0  # every token of its requests, over all its runs
    tool_uses: int = 0  # of its latest run
    fork: bool = False  # a fork of its parent (agentproc.fork)
    fork_call: str = ""  # a fork's: the parent's Agent call it was forked at (where its conversation starts)
    asking: PermissionRequest | None = None  # what it waits for its parent to allow (bubble)
    answer: BubbledAnswer | None = None  # its parent's answer, until it takes it
    # Moved to the background while it ran: by whom ("a person", "the auto-background timeout",
    # "its parent's model at check-in N", "a request only the lead can answer").
    moved_by: str = ""
    check_ins: int = 0  # times its waiting parent's model was asked whether to stop waiting


# Why a lead stopped: ``done`` only when every task of the team completed; ``failed`` when a
# task failed, ``unfinished`` when tasks were left open with none failed (nobody could go on,
# or a person ended the chat); ``error`` when the lead itself could not go on.
LeadStop = Literal["done", "failed", "unfinished", "timeout", "budget", "error", "interrupted"]


class LeadResult(msgspec.Struct, kw_only=True):
    """What ``agentteams lead`` (and ``Team.lead``) report when the lead is done."""

    team: str
    answer: str
    stopped_by: LeadStop
    turns: int
    seconds: float  # of the lead's work, from ``started_ns`` (what ``--timeout`` counts too)
    # When the lead's clock started, as wall-clock time.time_ns() (comparable across
    # processes, unlike a monotonic clock): 0 if the lead never started its work.
    started_ns: int = 0
    teammates: list[str] = []
    tasks: list[dict[str, Any]] = []  # id, subject, status ("failed" too), owner, error
    messages: int = 0
    error: str = ""
    usage: TeamUsage | None = None  # the team's model calls, as last seen before the end
    kept: bool = True  # the team is still there (a lead removes only a team made for it)
