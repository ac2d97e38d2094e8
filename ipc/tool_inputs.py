"""What an agent's tools take, one Struct per tool with Claude Code's field names, so prompts
and transcripts carry over. Each Struct is the whole contract of its tool's input: the
model is shown the JSON Schema derived from it (:func:`input_schema`), the Struct's
docstring is the tool's description (:func:`description`), and a call is decoded into it
once (:func:`decode`), a wrong input becoming one line the model can act on.

Optional fields default to ``None`` ("not given"); the schema shows them as their plain type,
since a model that sends ``null`` for one means the same. Bounds and defaults (``Meta(min_length=1)``,
``ge``, ``le``, a default value) are checked by the decode and named in its error, but left out of
the schema a model is shown, as Claude Code leaves them out of its own: paid for in every request.
"""

from __future__ import annotations

import functools
import inspect
import re
import types
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import msgspec
from msgspec import Meta, field

from ipc.errors import InvalidInput
from ipc.operations import schema as struct_schema
from ipc.paths import task_number, task_numbers

S = TypeVar("S", bound=msgspec.Struct)

MessageType = Literal[
    "message",
    "broadcast",
    "shutdown_request",
    "shutdown_response",
    "plan_approval_response",
    "permission_response",
]
MESSAGE_TYPES: tuple[MessageType, ...] = get_args(MessageType)
TaskStatus = Literal["pending", "in_progress", "completed", "deleted"]
# The Task/Agent tool's ``mode``, as Claude Code offers it.
AgentMode = Literal["acceptEdits", "bypassPermissions", "default", "delegate", "dontAsk", "plan"]
OutputMode = Literal["files_with_matches", "content", "count"]

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_READ_LINES = 2000

NonEmpty = Annotated[str, Meta(min_length=1)]


class _Input(msgspec.Struct, kw_only=True):
    """Unknown fields are ignored (msgspec's default): a model may add its own."""


# ---------------------------------------------------------------- coordination


class SendMessageInput(_Input):
    """Send a message to a teammate or the lead (type=message, needs recipient, content, summary), to
    everyone (broadcast), ask a teammate to shut down (shutdown_request), or answer a shutdown request
    (shutdown_response with request_id and approve). Claude Code 2.1.330's {to, message} form is accepted
    too."""

    kind: MessageType | None = field(default=None, name="type")
    recipient: Annotated[str | None, Meta(description="Member name, e.g. 'team-lead' or '@worker-1'")] = None
    content: str | None = None
    summary: Annotated[str | None, Meta(description="5-10 word preview")] = None
    request_id: str | None = None
    approve: bool = False
    permission_mode: str | None = None  # plan_approval_response: the mode the approved teammate gets
    always: Annotated[bool, Meta(description="permission_response: stop asking for calls like it")] = False
    to: str | None = None
    message: str | dict[str, Any] | None = None

    def __post_init__(self) -> None:
        """2.1.330's ``{to, message, summary}`` becomes 2.1.38's ``{type, recipient, content,
        summary, request_id, approve}``, so a tool reads one spelling; 2.1.38's is kept."""
        if self.kind is not None or self.to is None:
            return
        to, message = self.to, self.message
        self.recipient, self.content, self.request_id = to, None, None
        self.approve, self.permission_mode = False, None
        if isinstance(message, dict):
            self.kind = next((t for t in MESSAGE_TYPES if t == message.get("type")), None)
            if self.kind == "shutdown_request":
                self.content = _text(message.get("reason"))
            elif self.kind in ("shutdown_response", "plan_approval_response", "permission_response"):
                self.request_id = _text(message.get("request_id"))
                self.approve = message.get("approve") is True
                self.content = _text(message.get("reason")) or _text(message.get("feedback"))
            return
        self.kind = "broadcast" if to in ("*", "@team") else "message"
        self.content = message
        if not self.summary and message is not None:
            self.summary = message.strip().splitlines()[0][:60] if message.strip() else "message"


LeadMessageType = Literal[MessageType, "mode_set_request", "team_permission_update"]


class LeadSendMessageInput(SendMessageInput):
    """Send a message to a teammate or the lead (type=message, needs recipient, content, summary), to
    everyone (broadcast), ask a teammate to shut down (shutdown_request), answer a request, set a
    teammate's permission mode (mode_set_request with mode) or add rules or directories to its permissions
    for its session (team_permission_update with rules, behavior, directories; recipient '*': everyone).
    Claude Code 2.1.330's {to, message} form is accepted too."""

    kind: LeadMessageType | None = field(default=None, name="type")  # type: ignore[assignment]
    mode: Annotated[str | None, Meta(description="mode_set_request: the new permission mode")] = None
    rules: Annotated[list[str] | None, Meta(description="team_permission_update: e.g. Bash(npm test:*)")] = (
        None
    )
    behavior: Literal["allow", "deny", "ask"] = "allow"
    directories: list[str] | None = None

    def __post_init__(self) -> None:
        """The lead's own message types in 2.1.330's ``{to, message: {type, ...}}`` form too
        (only the lead is offered this input: a teammate's SendMessage has no such types)."""
        message = self.message
        kind = message.get("type") if isinstance(message, dict) else None
        if (
            self.kind is not None
            or self.to is None
            or kind not in ("mode_set_request", "team_permission_update")
        ):
            super().__post_init__()
            return
        assert isinstance(message, dict)
        self.kind, self.recipient = kind, self.to
        self.mode = _text(message.get("mode"))
        rules, directories = message.get("rules"), message.get("directories")
        self.rules = [str(r) for r in rules] if isinstance(rules, list) else None
        self.directories = [str(d) for d in directories] if isinstance(directories, list) else None
        behavior = message.get("behavior")
        if behavior in ("allow", "deny", "ask"):
            self.behavior = behavior


class TaskCreateInput(_Input):
    """Create a task in the team's shared task list. addBlockedBy (an agentteams addition) sets its
    blockers as it is created, so no teammate can claim it before them."""

    subject: NonEmpty
    description: str
    active_form: str | None = field(default=None, name="activeForm")
    metadata: dict[str, Any] | None = None
    add_blocked_by: list[str] | None = field(default=None, name="addBlockedBy")

    def __post_init__(self) -> None:
        self.add_blocked_by = task_numbers(self.add_blocked_by)


class TaskGetInput(_Input):
    """Read one task by id."""

    task_id: NonEmpty = field(name="taskId")

    def __post_init__(self) -> None:
        self.task_id = task_number(self.task_id)


class TaskListInput(_Input):
    """List every task with its status, owner and blockers."""


class TaskUpdateInput(_Input):
    """Update a task: status (pending, in_progress, completed, deleted), owner, dependencies, fields."""

    task_id: NonEmpty = field(name="taskId")
    status: TaskStatus | None = None
    subject: str | None = None
    description: str | None = None
    active_form: str | None = field(default=None, name="activeForm")
    owner: str | None = None
    add_blocks: list[str] | None = field(default=None, name="addBlocks")
    add_blocked_by: list[str] | None = field(default=None, name="addBlockedBy")
    metadata: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.task_id = task_number(self.task_id)
        self.add_blocks = task_numbers(self.add_blocks)
        self.add_blocked_by = task_numbers(self.add_blocked_by)


class ExitPlanModeInput(_Input):
    """Submit your plan for approval and, once approved, leave read-only plan mode."""

    plan: Annotated[str, Meta(min_length=1, description="The plan, in Markdown")]


class EnterPlanModeInput(_Input):
    """Enter read-only plan mode; submit the plan with ExitPlanMode."""


# ---------------------------------------------------------------- the lead's own


class TeamCreateInput(_Input):
    """Create the team (this lead's team already exists; calling it again returns it)."""

    team_name: NonEmpty
    description: str | None = None
    agent_type: str | None = None


class TeamDeleteInput(_Input):
    """Delete the team and its task list, once every teammate has shut down and every task is
    completed. Only a team made for this lead can be deleted."""


# ---------------------------------------------------------------- agents


class AgentInput(_Input):
    """Start an agent. With 'name' (team lead): spawn a teammate that joins the team and shares its
    task list. Else: run a subagent for one task (a teammate's 'name' names it); its final answer is the
    result, or with run_in_background it arrives later as a <task-notification>."""

    description: Annotated[str, Meta(description="A short (3-5 word) description of the task")]
    prompt: Annotated[str, Meta(min_length=1, description="The task for the agent to perform")]
    subagent_type: Annotated[
        str | None, Meta(description="The agent type: general-purpose, Explore, Plan, Bash or a custom one")
    ] = None
    model: Annotated[str | None, Meta(description="sonnet, opus, haiku or a model id")] = None
    name: Annotated[str | None, Meta(description="With a name, the lead spawns a teammate of its team")] = (
        None
    )
    team_name: str | None = None
    mode: AgentMode | None = None
    run_in_background: bool = False
    isolation: Annotated[
        Literal["worktree"] | None,
        Meta(description="worktree: the teammate works in its own git worktree of the team's repository"),
    ] = None
    resume: Annotated[str | None, Meta(description="An ended subagent's agentId, to continue it")] = None


class TaskOutputInput(_Input):
    """Read a background subagent's result; by default wait for it to finish (timeout in ms)."""

    task_id: NonEmpty
    block: bool = True
    timeout: Annotated[int, Meta(ge=0)] = 30_000


class TaskStopInput(_Input):
    """Stop a running background subagent."""

    task_id: NonEmpty


class TaskBackgroundInput(_Input):
    """At a check-in: stop waiting for the synchronous subagent your Agent call runs (it runs on; its
    result comes later as a <task-notification>)."""

    task_id: NonEmpty


# ---------------------------------------------------------------- work


class BashInput(_Input):
    """Run a shell command in the agent's working directory. stdin is /dev/null; output is capped at
    30,000 characters."""

    command: Annotated[str, Meta(min_length=1, description="The command to run")]
    timeout: Annotated[
        int, Meta(ge=1, le=MAX_TIMEOUT_MS, description=f"Timeout in milliseconds (max {MAX_TIMEOUT_MS})")
    ] = DEFAULT_TIMEOUT_MS
    description: Annotated[str | None, Meta(description="What the command does, in 5-10 words")] = None
    run_in_background: Annotated[bool, Meta(description="See TaskOutput and TaskStop")] = False


class WebFetchInput(_Input):
    """Fetch a URL's content as text."""

    url: NonEmpty
    prompt: str = ""


class ReadInput(_Input):
    """Read a file (line-numbered)."""

    file_path: NonEmpty
    offset: Annotated[int, Meta(ge=1)] = 1
    limit: Annotated[int, Meta(ge=1)] = MAX_READ_LINES


class WriteInput(_Input):
    """Write a file, replacing it."""

    file_path: NonEmpty
    content: str


class EditInput(_Input):
    """Replace text in a file."""

    file_path: NonEmpty
    old_string: NonEmpty
    new_string: str
    replace_all: bool = False


class GlobInput(_Input):
    """Find files by glob pattern."""

    pattern: NonEmpty
    path: str | None = None


class GrepInput(_Input):
    """Search file contents with a regular expression."""

    pattern: NonEmpty
    path: str | None = None
    glob: str | None = None
    output_mode: OutputMode = "files_with_matches"


# ---------------------------------------------------------------- what a model is shown


def description(cls: type[msgspec.Struct]) -> str:
    """The tool's description: its input Struct's docstring, each paragraph on one line."""
    text = inspect.cleandoc(cls.__doc__ or "")
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))


# What the decode checks and the model is not shown (see the module's docstring).
_CHECKED_ONLY = (
    "default",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
)


@functools.cache
def input_schema(cls: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON Schema a model is shown for ``cls``: the Struct's own object at the top
    (msgspec puts it behind a ``$ref``), nested Structs under ``$defs``, without a title or
    description (the tool has its description), an optional field as its plain type, an
    enum of strings typed as one, without bounds and defaults. Cached: callers must not
    change it."""
    top = struct_schema(cls)
    defs: dict[str, Any] = top.pop("$defs", {})
    top.pop("title", None)
    top.pop("description", None)
    if not top.get("required"):
        top.pop("required", None)
    schema = _plain(top)
    if defs:
        schema["$defs"] = {name: _plain(d) for name, d in defs.items()}
    return schema


def _plain(node: dict[str, Any]) -> dict[str, Any]:
    node = dict(node)
    alternatives = [a for a in node.get("anyOf", ()) if a != {"type": "null"}]
    if "anyOf" in node:
        del node["anyOf"]
        if len(alternatives) == 1:
            node.update(alternatives[0])
        else:
            node["anyOf"] = alternatives
    for key in _CHECKED_ONLY:
        node.pop(key, None)
    if "enum" in node and "type" not in node and all(isinstance(v, str) for v in node["enum"]):
        node = {"type": "string", **node}
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            node[key] = _plain(node[key])
    if "properties" in node:
        node["properties"] = {name: _plain(p) for name, p in node["properties"].items()}
    if "anyOf" in node:
        node["anyOf"] = [_plain(a) for a in node["anyOf"]]
    return node


# ---------------------------------------------------------------- decoding a call


def decode(cls: type[S], args: Mapping[str, Any], what: str) -> S:
    """``args`` (a tool's input as the model sent it) as ``cls``. Fields ``cls`` does not
    know are ignored and a ``null`` counts as not given; anything else that does not fit is
    InvalidInput, one line: ``{what}: 'timeout' expected int <= 600000``."""
    given = {k: v for k, v in args.items() if v is not None}
    try:
        return msgspec.convert(given, cls)
    except msgspec.ValidationError as exc:
        raise InvalidInput(f"{what}: {_explain(cls, str(exc))}") from None


_AT = re.compile(r"^(?P<problem>.*?)(?: - at `\$\.?(?P<path>[^`]*)`)?$", re.DOTALL)
_MISSING = re.compile(r"Object missing required field `(?P<name>[^`]+)`")


def _explain(cls: type[msgspec.Struct], error: str) -> str:
    """msgspec's validation message in our words: the field first, then what it must be."""
    match = _AT.match(error)
    assert match is not None  # the pattern matches any text
    problem, path = match["problem"], match["path"] or ""
    missing = _MISSING.fullmatch(problem)
    if missing:
        return f"'{f'{path}.' if path else ''}{missing['name']}' is required"
    problem = problem.replace("`", "")
    problem = problem[:1].lower() + problem[1:]
    if not path:
        return problem
    choices = _choices(cls, path)
    if problem.startswith("invalid enum value") and choices:
        return (
            f"'{path}' must be one of {', '.join(choices)}, not {problem.removeprefix('invalid enum value ')}"
        )
    return f"'{path}' {problem}"


def _choices(cls: type[msgspec.Struct], name: str) -> list[str]:
    """The values a Literal field (by its name on the wire) may take, in their order."""
    for info in msgspec.structs.fields(cls):
        if info.encode_name == name:
            return [str(v) for v in _literals(info.type)]
    return []


def _literals(kind: Any) -> list[Any]:
    origin = get_origin(kind)
    if origin is Literal:
        return list(get_args(kind))
    if origin is Annotated:
        return _literals(get_args(kind)[0])
    if origin in (Union, types.UnionType):
        return [v for arg in get_args(kind) for v in _literals(arg)]
    return []


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


class McpArgs(msgspec.Struct):
    """An MCP server's tool's input as the model sent it: its schema is the server's, and
    the server validates it."""

    arguments: dict[str, Any]
