"""Every on-disk shape of a team (Claude Code's layout) as a msgspec Struct: the single source of truth.

Python attributes are snake_case; on disk the names are exactly Claude Code's (camelCase,
except the permission bodies, which Claude Code writes in snake_case). Optional fields are
``UNSET`` and omitted when written, as Claude Code omits them.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

import msgspec
from msgspec import UNSET, Struct, UnsetType, field

COLORS: tuple[str, ...] = ("blue", "green", "yellow", "purple", "orange", "pink", "cyan", "red")
LEAD_NAME = "team-lead"
LEAD_AGENT_TYPE = "team-lead"
BACKEND_TYPE = "process"

TaskStatus = Literal["pending", "in_progress", "completed"]
IdleReason = Literal["available", "interrupted", "failed"]


@functools.cache
def struct_fields(cls: type[Struct]) -> tuple[msgspec.structs.FieldInfo, ...]:
    """``msgspec.structs.fields``, once per class: it evaluates every annotation again at each
    call (~150 µs, a compile per string annotation), and spawns and task updates ask."""
    return msgspec.structs.fields(cls)


# ---------------------------------------------------------------- team config


class Member(Struct, rename="camel", kw_only=True):
    """A team member; the lead has only the first eight fields, teammates all thirteen.
    Fields another writer may omit (Claude Code 2.1.330's lead has no ``model``, its
    teammates no ``isActive``) are optional; what is absent stays absent when rewritten."""

    agent_id: str
    name: str
    agent_type: str | UnsetType = UNSET  # 2.1.330's in-process teammates have none
    model: str | UnsetType = UNSET
    prompt: str | UnsetType = UNSET
    color: str | UnsetType = UNSET
    plan_mode_required: bool | UnsetType = UNSET
    joined_at: int = 0
    tmux_pane_id: str = ""
    cwd: str = ""
    subscriptions: list[str] = []
    backend_type: str | UnsetType = UNSET
    is_active: bool | UnsetType = UNSET
    host: str | UnsetType = UNSET  # the host it runs on, in a team on the engine
    verify_key: str | UnsetType = UNSET  # its Ed25519 public key (ipc.trust); none: it cannot sign
    # agentteams': the mode it was spawned with (or last set to), so that a restart keeps it
    permission_mode: str | UnsetType = UNSET
    allowed_tools: str | UnsetType = UNSET  # agentteams': its --allowed-tools, kept for restarts
    disallowed_tools: str | UnsetType = UNSET
    effort: str | UnsetType = UNSET  # agentteams': the effort it was spawned with

    @property
    def mode_name(self) -> str:
        return self.permission_mode if isinstance(self.permission_mode, str) else ""

    @property
    def host_name(self) -> str:
        return self.host if isinstance(self.host, str) else ""

    @property
    def model_name(self) -> str:
        return self.model if isinstance(self.model, str) else ""

    @property
    def agent_type_name(self) -> str:
        return self.agent_type if isinstance(self.agent_type, str) else ""

    @property
    def color_name(self) -> str:
        return self.color if isinstance(self.color, str) else ""


class LeadProcess(Struct, rename="camel", kw_only=True):
    """Claude Code 2.1.330's record of the session that owns the team."""

    pid: int
    pid_space: Any = None
    claimed_at: Any = None
    proc_start: Any = None


class TeamConfig(Struct, rename="camel", kw_only=True):
    name: str
    description: str | UnsetType = UNSET  # 2.1.330 writes none
    created_at: int = 0
    lead_agent_id: str = ""
    lead_session_id: str = ""
    lead_process: LeadProcess | UnsetType = UNSET
    members: list[Member] = []
    # More public keys a name's entries verify with (ipc.trust): earlier incarnations',
    # removed members', and the lead side's on each host of a team across hosts.
    known_keys: dict[str, list[str]] | UnsetType = UNSET

    def member(self, name: str) -> Member | None:
        return next((m for m in self.members if m.name == name), None)

    def teammates(self) -> list[Member]:
        return [m for m in self.members if m.name != LEAD_NAME]

    @property
    def description_text(self) -> str:
        return self.description if isinstance(self.description, str) else ""

    @property
    def writes_v2(self) -> bool:
        """True for a team made by Claude Code 2.1.330 or later (its inbox entries carry
        ``msgV``, ``msg_id`` and ``type``)."""
        return isinstance(self.lead_process, LeadProcess)


# ---------------------------------------------------------------- inbox


class InboxMessage(Struct, kw_only=True):
    from_: str = field(name="from")
    text: str
    timestamp: str
    read: bool = False
    summary: str | UnsetType = UNSET
    color: str | UnsetType = UNSET
    # Other writers' fields, passed through whatever their type: never a reason to skip.
    msg_id: Any = UNSET
    msg_v: Any = field(name="msgV", default=UNSET)
    type: Any = UNSET
    from_plugin: Any = UNSET
    lead_sig: Any = UNSET  # Claude Code 2.1.330's signature on team-lead's entries (ipc.trust)
    sig: Any = UNSET  # the same scheme on every other member's entries
    via: Any = UNSET  # "person": written unsigned by a person in a member's name (agentteams send --from)

    @property
    def summary_text(self) -> str:
        return self.summary if isinstance(self.summary, str) else ""

    @property
    def color_name(self) -> str:
        return self.color if isinstance(self.color, str) else ""


# ---------------------------------------------------------------- protocol bodies


class _Body(Struct, tag_field="type", rename="camel", kw_only=True):
    """Base of every JSON body carried in an inbox message's ``text``."""


class IdleNotification(_Body, tag="idle_notification"):
    from_: str = field(name="from")
    timestamp: str
    idle_reason: IdleReason = "available"
    summary: str | UnsetType = UNSET
    completed_task_id: str | UnsetType = UNSET
    completed_status: str | UnsetType = UNSET
    failure_reason: str | UnsetType = UNSET
    result: str | UnsetType = UNSET  # 2.1.330: the teammate's final text


class TaskAssignment(_Body, tag="task_assignment"):
    task_id: str
    subject: str
    description: str
    assigned_by: str
    timestamp: str


class ShutdownRequest(_Body, tag="shutdown_request"):
    request_id: str
    from_: str = field(name="from")
    reason: str
    timestamp: str


class ShutdownApproved(_Body, tag="shutdown_approved"):
    request_id: str
    from_: str = field(name="from")
    timestamp: str
    pane_id: str
    backend_type: str


class ShutdownRejected(_Body, tag="shutdown_rejected"):
    request_id: str
    from_: str = field(name="from")
    reason: str
    timestamp: str


class PlanApprovalRequest(_Body, tag="plan_approval_request"):
    from_: str = field(name="from")
    timestamp: str
    plan_file_path: str
    plan_content: str
    request_id: str


class PlanApprovalResponse(_Body, tag="plan_approval_response"):
    request_id: str
    approved: bool
    timestamp: str
    permission_mode: str | UnsetType = UNSET
    feedback: str | UnsetType = UNSET


class PermissionRequest(_Body, tag="permission_request", rename=None):
    request_id: str
    agent_id: str
    tool_name: str
    tool_use_id: str
    description: str
    input: dict[str, Any]
    permission_suggestions: list[dict[str, Any]] = []


class PermissionGrant(Struct, kw_only=True):
    updated_input: dict[str, Any]
    permission_updates: list[dict[str, Any]] = []


class PermissionResponse(_Body, tag="permission_response", rename=None):
    request_id: str
    subtype: Literal["success", "error"]
    response: PermissionGrant | UnsetType = UNSET
    error: str | UnsetType = UNSET


class ModeSetRequest(_Body, tag="mode_set_request"):
    """The lead sets a running teammate's permission mode (Claude Code's mode_set_request)."""

    mode: str
    from_: str = field(name="from")
    timestamp: str
    # agentteams': the teammate it is for. Claude Code's lead names none (and its teammates
    # never take a mode from the inbox); ours do, so a copy in another inbox is refused.
    target: str | UnsetType = UNSET


class TeamPermissionUpdate(_Body, tag="team_permission_update"):
    """The lead widens (or narrows) a running teammate's permissions for the rest of its
    session (Claude Code's team_permission_update): one permission update, as an approval's
    ``permission_updates`` carry them (``addRules`` with ``rules``, ``behavior`` and
    ``destination: session``; agentteams also sends ``addDirectories``)."""

    permission_update: dict[str, Any]
    directory_path: str = ""  # the working directory the update was made from
    tool_name: str = ""  # the tool its first rule is for
    from_: str | UnsetType = field(default=UNSET, name="from")  # agentteams': who sent it
    timestamp: str | UnsetType = UNSET
    target: str | UnsetType = UNSET  # agentteams': the teammate it is for (as a mode's)


ProtocolBody = (
    IdleNotification
    | TaskAssignment
    | ShutdownRequest
    | ShutdownApproved
    | ShutdownRejected
    | PlanApprovalRequest
    | PlanApprovalResponse
    | PermissionRequest
    | PermissionResponse
    | ModeSetRequest
    | TeamPermissionUpdate
)

_body_decoder: msgspec.json.Decoder[ProtocolBody] = msgspec.json.Decoder(ProtocolBody)


def parse_body(text: str) -> ProtocolBody | None:
    """The protocol body in ``text``, or None: JSON that is not a valid body is plain text."""
    if not text.startswith("{"):
        return None
    try:
        return _body_decoder.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def body_text(body: ProtocolBody) -> str:
    """A body stringified compactly for an inbox message's ``text``, as Claude Code does."""
    return msgspec.json.encode(body).decode()


# ---------------------------------------------------------------- task


class Task(Struct, rename="camel", kw_only=True):
    id: str
    subject: str
    description: str = ""
    active_form: str | UnsetType = UNSET
    status: TaskStatus = "pending"
    owner: str | UnsetType = UNSET
    blocks: list[str] = []
    blocked_by: list[str] = []
    metadata: dict[str, Any] | UnsetType = UNSET

    @property
    def owner_name(self) -> str | None:
        """The owner, or None: Claude Code may write an empty string for 'nobody'."""
        return self.owner if isinstance(self.owner, str) and self.owner else None

    @property
    def meta(self) -> dict[str, Any]:
        return self.metadata if isinstance(self.metadata, dict) else {}

    @property
    def internal(self) -> bool:
        """Claude Code's hidden per-teammate task (``metadata._internal``)."""
        return self.meta.get("_internal") is True

    @property
    def failed(self) -> bool:
        """Open, and its last attempt failed (``metadata.lastError``)."""
        return self.status != "completed" and "lastError" in self.meta


# ---------------------------------------------------------------- events to the lead


class TeammateTerminated(Struct, tag_field="type", tag="teammate_terminated", rename="camel", kw_only=True):
    """Delivered to the lead as an event (``events.jsonl``), never through an inbox file."""

    name: str
    agent_id: str
    timestamp: str
    status: Literal["completed", "failed", "killed"]
    detail: str = ""
    exit_code: int | UnsetType = UNSET
    signal: int | UnsetType = UNSET
    released_tasks: list[str] = []
    restarting: bool = False
    worktree: str | UnsetType = UNSET  # its worktree, kept because it has changes


def dump_json(obj: object) -> bytes:
    """Readable JSON (two-space indent), as Claude Code writes its state files."""
    return msgspec.json.format(msgspec.json.encode(obj), indent=2) + b"\n"
