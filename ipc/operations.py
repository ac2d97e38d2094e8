"""The inputs and outputs of the table of team operations, one Struct each.

Every door is a view of the same table (:mod:`supervisor.client.operations`): the command
line, the Python ``Team``, the MCP tools and the HTTP routes. Their schemas come from these
Structs (``msgspec.json.schema``), so a field is named, typed and documented once. A
Struct's docstring is what a door shows as the operation's input description.

Who acts is not an input: the door knows it (the lead side by default; a member when an
MCP session joined as one, or ``agentteams send --from``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar, cast

import msgspec
from msgspec import Meta, Struct

from ipc.paths import TASK_ID, task_number, task_numbers
from ipc.permission_updates import PermissionUpdate
from ipc.schemas import InboxMessage, PermissionRequest, PlanApprovalRequest, Task

TaskId = Annotated[str, Meta(pattern=f"^{TASK_ID.pattern}$", description="a task number, e.g. '7'")]
Ids = TypeVar("Ids", bound="list[str] | None")
TaskState = Literal["pending", "in_progress", "completed", "deleted"]
# Claude Code's permission updates as a door takes them: JSON objects, each checked by
# ipc.permission_updates.parse in the operation, so every door refuses a wrong one in the same words.
RawUpdates = Annotated[
    list[dict[str, Any]],
    Meta(
        description="Claude Code's permission updates: {type: addRules|replaceRules|removeRules, rules: "
        "[{toolName, ruleContent?}], behavior: allow|deny|ask, destination: session|localSettings|"
        "projectSettings|userSettings}, {type: setMode, mode, destination}, or {type: "
        "addDirectories|removeDirectories, directories, destination}"
    ),
]


def _numbers(ids: Ids) -> Ids:
    """Task ids as their files are named ('01' is task #1). Every input that takes a task id
    reads it through :func:`~ipc.paths.task_number` when it is made or decoded, so every door
    (and every message it writes) has the one spelling."""
    if not isinstance(ids, list):
        return ids  # None, or not a list: the Struct's own check refuses it
    return cast(Ids, task_numbers(ids))


class NoInput(Struct, forbid_unknown_fields=True):
    """Nothing to give."""


class TeamBrief(Struct, kw_only=True):
    """A team under the root, as a list of teams shows it."""

    name: str
    description: str
    members: int  # the lead too


class Teams(Struct, kw_only=True):
    teams: list[TeamBrief]
    problems: list[str] = []  # a team whose config does not parse, one line each


# ---------------------------------------------------------------- the team


class MemberInfo(Struct, kw_only=True):
    name: str
    agent_id: str
    agent_type: str = ""
    model: str = ""
    color: str = ""
    backend: str = ""
    active: bool | None = None  # None: the writer does not record it (Claude Code 2.1.330)
    state: str = ""  # as the running supervisor sees it: running, idle, failed…
    pid: int | None = None
    task: str = ""  # the task it works on, if any


class Members(Struct, kw_only=True):
    members: list[MemberInfo]


class TaskCounts(Struct, kw_only=True):
    pending: int = 0
    in_progress: int = 0
    completed: int = 0
    failed: int = 0


class TeamSummary(Struct, kw_only=True):
    team: str
    description: str
    up: bool  # its supervisor runs
    supervisor: int | None
    members: list[MemberInfo]
    tasks: TaskCounts
    pending_requests: int


# ---------------------------------------------------------------- messages


class SendMessage(Struct, kw_only=True, forbid_unknown_fields=True):
    """Send a message to a member of the team by name ('*' for every member but you)."""

    to: Annotated[str, Meta(description="a member's name ('@name' works too), or '*' for everyone")]
    text: Annotated[str, Meta(description="the message")]
    summary: Annotated[str, Meta(description="5-10 words shown in previews")] = ""


class Routing(Struct, kw_only=True, omit_defaults=True, rename={"target_color": "targetColor"}):
    sender: str
    target: str  # "@name", or "@team" for a broadcast
    target_color: str = ""
    summary: str = ""
    content: str = ""


class Sent(Struct, kw_only=True, omit_defaults=True):
    """Claude Code's SendMessage response."""

    success: bool
    message: str
    routing: Routing
    recipients: list[str] = []  # a broadcast's


class ReadInbox(Struct, kw_only=True, forbid_unknown_fields=True):
    """Read an inbox: your own by default. Reading your own unread messages marks them read."""

    unread_only: bool = True
    name: Annotated[str, Meta(description="whose inbox (default: your own)")] = ""
    mark_read: Annotated[bool, Meta(description="mark what is returned as read (your own inbox only)")] = True


class Messages(Struct, kw_only=True):
    messages: list[InboxMessage]


class WaitForMessages(Struct, kw_only=True, forbid_unknown_fields=True):
    """Wait for messages in your inbox: returns the moment one arrives (marked read), or
    nothing after timeout_s. Protocol messages come as readable events saying how to answer."""

    timeout_s: Annotated[float, Meta(ge=0, le=3600, description="seconds to wait at most")] = 30.0


class Event(Struct, kw_only=True, omit_defaults=True, rename={"from_": "from"}):
    """One inbox message as an agent reads it. ``kind`` is ``message`` for plain text, else
    the protocol message's type; ``text`` then says in words what it asks and how to answer."""

    kind: str
    from_: str
    text: str
    timestamp: str
    summary: str = ""
    color: str = ""
    request_id: str = ""  # a shutdown, plan or permission request's, to answer it by
    task_id: str = ""  # a task assignment's
    body: dict[str, Any] | None = None  # the protocol message as sent
    # ipc.trust: "verified", "unverified" (a sender that cannot sign, or a person in its
    # name), "refused" (forged, or a command its sender may not give: text says why); in a
    # look at inboxes (team_messages, the events stream), "forged" for what a take refuses
    trust: str = ""


class Events(Struct, kw_only=True):
    events: list[Event]


class MessageQuery(Struct, kw_only=True, forbid_unknown_fields=True):
    """The team's messages: every inbox, merged, oldest first."""

    limit: Annotated[int, Meta(ge=0, description="the latest this many; 0 for all")] = 200


class TeamMessage(Struct, kw_only=True):
    """One message as it sits in an inbox: to whom, whether it was read, and the message
    as a readable event."""

    to: str
    read: bool
    event: Event


class TeamMessages(Struct, kw_only=True):
    messages: list[TeamMessage]


# ---------------------------------------------------------------- tasks


class TaskCreate(Struct, kw_only=True, forbid_unknown_fields=True):
    """Create a task in the team's shared task list."""

    subject: str
    description: str = ""
    blocked_by: Annotated[list[TaskId], Meta(description="tasks that must complete first")] = []
    metadata: dict[str, Any] | None = None
    active_form: str | None = None
    owner: Annotated[
        str | None,
        Meta(
            description="a member who owns it from the start (told in its inbox); no idle teammate can claim it first"
        ),
    ] = None

    def __post_init__(self) -> None:
        self.blocked_by = _numbers(self.blocked_by)


class TaskQuery(Struct, kw_only=True, forbid_unknown_fields=True):
    """List the team's tasks, by id."""

    status: Literal["pending", "in_progress", "completed", "failed"] | None = None
    include_internal: Annotated[bool, Meta(description="also Claude Code's hidden teammate tasks")] = False


class TaskRef(Struct, kw_only=True, forbid_unknown_fields=True):
    """One task by id."""

    id: TaskId

    def __post_init__(self) -> None:
        self.id = task_number(self.id)


class TaskClaim(Struct, kw_only=True, forbid_unknown_fields=True):
    """Claim a task (the lowest claimable one when no id is given): it becomes yours and in progress."""

    id: TaskId | None = None
    agent: Annotated[str, Meta(description="claim for this member (default: yourself)")] = ""
    check_busy: Annotated[bool, Meta(description="refuse if the member already has a task in progress")] = (
        False
    )

    def __post_init__(self) -> None:
        self.id = None if self.id is None else task_number(self.id)


class TaskUpdate(Struct, kw_only=True, forbid_unknown_fields=True):
    """Change a task; only the fields given change. Setting an owner tells that member. A task
    starts (in_progress) only once its blockers are completed."""

    id: TaskId
    status: TaskState | None = None
    owner: Annotated[str | None, Meta(description="a member's name; '' clears the owner")] = None
    subject: str | None = None
    description: str | None = None
    active_form: str | None = None
    add_blocks: Annotated[list[TaskId] | None, Meta(description="tasks that wait for this one")] = None
    add_blocked_by: Annotated[list[TaskId] | None, Meta(description="tasks this one waits for")] = None
    remove_blocks: Annotated[list[TaskId] | None, Meta(description="tasks that no longer wait for it")] = None
    remove_blocked_by: Annotated[list[TaskId] | None, Meta(description="tasks it no longer waits for")] = None
    metadata: Annotated[
        dict[str, Any] | None, Meta(description="keys to set; a null value deletes the key")
    ] = None

    def __post_init__(self) -> None:
        self.id = task_number(self.id)
        self.add_blocks = _numbers(self.add_blocks)
        self.add_blocked_by = _numbers(self.add_blocked_by)
        self.remove_blocks = _numbers(self.remove_blocks)
        self.remove_blocked_by = _numbers(self.remove_blocked_by)


class TaskList(Struct, kw_only=True):
    tasks: list[Task]


class TaskChanged(Struct, kw_only=True):
    task: Task | None  # None: it was deleted
    unblocked: list[str] = []  # tasks the change made claimable


class TaskDeleted(Struct, kw_only=True):
    deleted: str
    unblocked: list[str] = []


# ---------------------------------------------------------------- teammates


class ShutdownTeammate(Struct, kw_only=True, forbid_unknown_fields=True):
    """Ask a teammate to shut down (it leaves the team once it approves); force stops it regardless."""

    name: str
    force: bool = False
    grace: Annotated[float, Meta(gt=0, le=86400, description="seconds it has before a forced stop")] = 10.0
    reason: str = ""


class MemberRef(Struct, kw_only=True, forbid_unknown_fields=True):
    """A member by name."""

    name: str


class SubagentRef(Struct, kw_only=True, forbid_unknown_fields=True):
    """A running subagent, by its id (``sub-…``)."""

    subagent: str


class SetMode(Struct, kw_only=True, forbid_unknown_fields=True):
    """Set a teammate's permission mode: at once if it runs, and when it is started again."""

    name: str
    mode: Annotated[str, Meta(description="default, acceptEdits, bypassPermissions, plan or dontAsk")]


class ModeSet(Struct, kw_only=True):
    name: str
    mode: str


class UpdatePermissions(Struct, kw_only=True, forbid_unknown_fields=True):
    """Change running teammates' permissions for the rest of their session (Claude Code's
    team_permission_update): rules added as allow, deny or ask, directories added."""

    name: Annotated[str, Meta(description="a teammate, or * for every teammate")] = "*"
    rules: Annotated[
        list[str], Meta(description="Claude Code's rules, e.g. Bash(npm test:*), Edit(src/**)")
    ] = []
    behavior: Literal["allow", "deny", "ask"] = "allow"
    directories: Annotated[list[str], Meta(description="working directories to add")] = []
    updates: RawUpdates = []


class PermissionsUpdated(Struct, kw_only=True):
    names: list[str]  # the teammates it was sent to
    updates: list[PermissionUpdate]  # Claude Code's permission updates, as sent


class Push(Struct, kw_only=True, forbid_unknown_fields=True):
    """An in-memory message a running teammate takes before anything else (not kept on disk)."""

    name: str
    text: str


class Pushed(Struct, kw_only=True):
    pushed: str


# ---------------------------------------------------------------- logs


class ReadLog(Struct, kw_only=True, forbid_unknown_fields=True):
    """The end of the supervisor's log, or of an agent's (what its process printed)."""

    name: Annotated[str, Meta(description="an agent's name; '' for the supervisor")] = ""
    lines: Annotated[int, Meta(ge=0, description="how many lines from the end; 0 for all")] = 200


class ReadTranscript(Struct, kw_only=True, forbid_unknown_fields=True):
    """An agent's conversation as its transcript keeps it: turns, tool calls and results."""

    name: Annotated[str, Meta(description="the agent (the lead: 'team-lead')")]
    limit: Annotated[int, Meta(ge=0, description="the last this many entries; 0 for all")] = 200


class TranscriptPart(Struct, kw_only=True, omit_defaults=True):
    """One block of a turn: ``text``, ``tool_use`` (name, id, input), ``tool_result`` (id,
    text, is_error), ``thinking``."""

    type: str
    text: str = ""
    name: str = ""
    id: str = ""
    input: Any = None
    is_error: bool = False


class TranscriptEntry(Struct, kw_only=True, omit_defaults=True):
    role: str  # user, assistant, or compaction (its summary as the one part)
    timestamp: str
    parts: list[TranscriptPart]
    sidechain: str = ""  # a subagent's turn, in its parent's transcript


class Transcript(Struct, kw_only=True):
    name: str
    path: str
    entries: list[TranscriptEntry]


class Log(Struct, kw_only=True):
    path: str
    text: str
    size: int  # bytes in the file when read: where a follower goes on from


# ---------------------------------------------------------------- requests


class AnswerRequest(Struct, kw_only=True, forbid_unknown_fields=True):
    """Approve or deny a teammate's plan or permission request."""

    request_id: str
    approve: bool
    feedback: str = ""
    updated_input: Annotated[
        dict[str, Any] | None, Meta(description="a permission request's tool input to use instead")
    ] = None
    permission_mode: Annotated[str, Meta(description="the mode an approved plan hands the teammate")] = ""
    always: Annotated[
        bool,
        Meta(
            description="a permission request: also apply its suggestions, so that calls like it stop asking"
        ),
    ] = False
    permission_updates: RawUpdates | None = None  # a permission request's, kept by the teammate


class Requests(Struct, kw_only=True):
    requests: list[PlanApprovalRequest | PermissionRequest]


def schema(kind: type[Struct]) -> dict[str, Any]:
    """A self-contained JSON Schema object for ``kind`` (its own definition, with the
    definitions it refers to kept beside it), as tool and API descriptions want it."""
    generated: dict[str, Any] = msgspec.json.schema(kind)
    defs: dict[str, Any] = generated.pop("$defs", {})
    ref = generated.get("$ref", "")
    name = ref.rsplit("/", 1)[-1]
    top: dict[str, Any] = dict(defs.pop(name, generated))
    if defs:
        top["$defs"] = defs
    return top
