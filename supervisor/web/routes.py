"""The JSON API: the table of operations as HTTP routes, and the one error hierarchy as HTTP
statuses. A route names an operation; its input is the JSON body (or, for a GET or DELETE,
the query string) with the path's parameters set over it, converted to the operation's
input Struct. Nothing here decides anything an operation does: a route only says where
the table's arguments come from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from ipc.errors import (
    AgentTeamsError,
    Conflict,
    CorruptFile,
    Forbidden,
    InvalidInput,
    LockTimeout,
    NotFound,
    NotRunning,
    StorageError,
    SupervisorError,
    TaskFailed,
    Timeout,
    TransportError,
    UnsafeRuntimeDir,
)
from ipc.input_words import convert
from ipc.paths import task_number
from supervisor.client.operations import TABLE, Operation

PREFIX = "/api/v1"
TEAM = PREFIX + "/teams/{team}"


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # under /api/v1/teams/{team}
    op: str
    fixed: dict[str, Any] = field(default_factory=dict)  # set by the door, whatever is asked

    @property
    def operation(self) -> Operation[Any, Any]:
        return TABLE[self.op]

    @property
    def full_path(self) -> str:
        return TEAM + self.path

    @property
    def params(self) -> list[str]:
        """The path's parameters, the team's aside: each one a field of the input."""
        return [p.strip("{}") for p in self.path.split("/") if p.startswith("{")]


ROUTES = [
    Route("GET", "", "team_status"),
    Route("GET", "/members", "list_members"),
    Route("POST", "/members", "spawn_teammate"),
    Route("POST", "/members/{name}/shutdown", "shutdown_teammate"),
    Route("POST", "/members/{name}/restart", "restart_teammate"),
    Route("POST", "/members/{name}/push", "push"),
    Route("POST", "/subagents/{subagent}/background", "background_subagent"),
    Route("POST", "/members/{name}/mode", "set_mode"),
    Route("POST", "/members/{name}/permissions", "update_permissions"),
    Route("GET", "/members/{name}/diff", "diff"),
    Route("GET", "/messages", "team_messages"),
    Route("POST", "/messages", "send_message"),
    # Looking at an inbox over HTTP never marks it read: a GET changes nothing.
    Route("GET", "/inboxes/{name}", "read_inbox", {"mark_read": False}),
    Route("GET", "/tasks", "task_list"),
    Route("POST", "/tasks", "task_create"),
    Route("POST", "/tasks/claim", "task_claim"),
    Route("GET", "/tasks/{id}", "task_get"),
    Route("PATCH", "/tasks/{id}", "task_update"),
    Route("DELETE", "/tasks/{id}", "task_delete"),
    Route("POST", "/tasks/{id}/claim", "task_claim"),
    Route("GET", "/requests", "list_requests"),
    Route("POST", "/requests/{request_id}", "answer_request"),
    Route("GET", "/logs", "read_log"),
    Route("GET", "/transcripts/{name}", "read_transcript"),
    Route("GET", "/usage", "usage"),
    Route("GET", "/ps", "ps"),
]

# Each class's status; a subclass not named takes its nearest base's.
STATUS: dict[type[AgentTeamsError], int] = {
    InvalidInput: 400,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    TaskFailed: 409,
    NotRunning: 409,  # the team is down: start it, then ask again
    CorruptFile: 500,
    StorageError: 500,
    LockTimeout: 503,
    UnsafeRuntimeDir: 500,
    SupervisorError: 409,  # the supervisor refused: what it said is about the team's state
    TransportError: 503,
    Timeout: 504,
}


def status_of(error: AgentTeamsError) -> int:
    for kind in type(error).__mro__:
        if kind in STATUS:
            return STATUS[kind]
    return 500


class ErrorBody(msgspec.Struct, kw_only=True):
    """Every error's body: the command line's one line, and the kind of error."""

    error: str
    kind: str


def error_body(error: AgentTeamsError) -> ErrorBody:
    return ErrorBody(error=error.message, kind=type(error).__name__)


def arguments(route: Route, given: dict[str, Any], path: dict[str, str], *, from_query: bool) -> Any:
    """The operation's input: ``given`` (the body, or the query string) with the path's
    parameters and the route's fixed fields set over it. Bad input is one line naming the
    operation and the field."""
    if not isinstance(given, dict):
        raise InvalidInput(f"{route.op}: the body must be a JSON object, not {type(given).__name__}")
    where = "query string" if from_query else "body"
    set_here = {**{p: path[p] for p in route.params}, **route.fixed}
    for key, value in set_here.items():
        # The path (or the route) decides: a different value beside it would be dropped
        # without a word, and PATCH /tasks/5 with {"id": "6"} would change #5.
        if key in given and _text(given[key]) != _text(value):
            said = f"the path says {value!r}" if key in route.params else f"this route sets it to {value!r}"
            raise InvalidInput(
                f"{route.op}: {key!r} is {given[key]!r} in the {where} but {said}; leave it out of the {where}"
            )
    data = {**given, **set_here}
    # A query string is text: '?unread_only=false' and '?lines=20' are read as their type.
    return convert(route.op, data, route.operation.input, strict=not from_query)


def _text(value: Any) -> str:
    """A value as a query string spells it, in the form the operation reads it: ``False``
    and ``'false'``, task ``'05'`` and ``'5'``, member ``'@ada'`` and ``'ada'`` are the same."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return task_number(value.removeprefix("@"))
    return str(value)


def query_arguments(route: Route, query: list[tuple[str, str]]) -> dict[str, Any]:
    """A query string's fields; one given twice is refused rather than guessed."""
    found: dict[str, Any] = {}
    for key, value in query:
        if key == "token":
            continue  # the door's, not the operation's
        if key in found:
            raise InvalidInput(f"{route.op}: {key!r} is given twice in the query string; give it once")
        found[key] = value
    return found
