"""Subagent results on disk (``teams/{team}/subagents/{id}.json``): written by the subagent
(or, when it dies, by the supervisor), read by its parent. One small file each, replaced
whole."""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ipc.boundary import decode_errors
from ipc.clock import now_ms
from ipc.errors import AgentTeamsError, Conflict, NotFound
from ipc.locks import locked
from ipc.options import SubagentOptions
from ipc.paths import TeamPaths, normalise_agent_name
from ipc.replies import BubbledAnswer, SubagentResult, SubagentStatus
from ipc.schemas import PermissionRequest, dump_json
from ipc.storage import atomic_write, read_bytes

_decoder = msgspec.json.Decoder(SubagentResult)


class ForkBase(msgspec.Struct, kw_only=True):
    """What a fork's requests begin with, as its parent's did when it forked: the parent's
    system prompt and tool definitions, byte for byte (its conversation is read from the
    parent's transcript), so the fork's first request reads the parent's cached prefix."""

    system: str
    tools: list[dict[str, Any]]


_fork_decoder = msgspec.json.Decoder(ForkBase)
MAX_RESULT_CHARS = 100_000  # Claude Code's maxResultSizeChars for a subagent's result
# The supervisor's answer to a resume of a subagent that has recorded its end but whose
# process has not exited yet: the parent tries again (it comes within milliseconds).
STILL_ENDING = "is still ending"


def read(paths: TeamPaths, subagent: str) -> SubagentResult:
    path = paths.subagent_result(subagent)
    data = read_bytes(path)
    if data is None:
        raise NotFound(f"no subagent {subagent!r} in team {paths.team!r}")
    with decode_errors(path, "subagent result"):
        return _decoder.decode(data)


def write(paths: TeamPaths, result: SubagentResult) -> None:
    atomic_write(paths.subagent_result(result.id), dump_json(result))


def finish(
    paths: TeamPaths,
    subagent: str,
    status: SubagentStatus,
    *,
    result: str = "",
    error: str = "",
    tokens: int | None = None,
    tool_uses: int = 0,
) -> SubagentResult:
    """Record how a subagent ended (unless it already recorded it itself)."""
    with locked(paths.subagent_result(subagent), root=paths.root):
        current = read(paths, subagent)
        if current.status != "running":
            return current
        done = msgspec.structs.replace(
            current,
            status=status,
            result=result[:MAX_RESULT_CHARS],
            error=error,
            ended_ms=now_ms(),
            tokens=current.tokens if tokens is None else tokens,
            tool_uses=tool_uses,
            inbox=[],
            asking=None,
            answer=None,
        )
        write(paths, done)
        return done


def take_or_finish(paths: TeamPaths, subagent: str, *, result: str, tokens: int, tool_uses: int) -> list[str]:
    """At the end of a subagent's turn: the messages its parent queued meanwhile (it goes on
    with them), or none, and then it is recorded as completed. One locked step, so that a
    message is either taken or finds the subagent ended (and resumes it)."""
    with locked(paths.subagent_result(subagent), root=paths.root):
        current = read(paths, subagent)
        if current.inbox:
            write(paths, msgspec.structs.replace(current, inbox=[]))
            return list(current.inbox)
    finish(paths, subagent, "completed", result=result, tokens=tokens, tool_uses=tool_uses)
    return []


def queue(paths: TeamPaths, subagent: str, text: str) -> bool:
    """Queue ``text`` for a running subagent's next turn; False if it is not running."""
    with locked(paths.subagent_result(subagent), root=paths.root):
        current = read(paths, subagent)
        if current.status != "running":
            return False
        write(paths, msgspec.structs.replace(current, inbox=[*current.inbox, text]))
        return True


def find(paths: TeamPaths, parent: str, ref: str) -> SubagentResult | None:
    """``parent``'s subagent by id or by the name it was given (the latest of that name)."""
    folder = paths.team_dir / "subagents"
    found: SubagentResult | None = None
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            result = read(paths, path.stem)
        except AgentTeamsError:
            continue
        if result.parent == parent and ref in (result.id, result.name):
            if result.id == ref:
                return result
            if found is None or result.started_ms > found.started_ms:
                found = result
    return found


def usage_text(result: SubagentResult) -> str:
    """Claude Code's ``<usage>`` of a subagent's run."""
    duration = max(0, result.ended_ms - result.started_ms) if result.ended_ms else 0
    return f"<usage>total_tokens: {result.tokens}\ntool_uses: {result.tool_uses}\nduration_ms: {duration}</usage>"


def end_orphans(paths: TeamPaths, why: str) -> list[str]:
    """Record every subagent still recorded running as killed, ``why``; their ids. Only for
    a supervisor starting, when none can be running (they are its children)."""
    folder = paths.team_dir / "subagents"
    ended = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            if read(paths, path.stem).status == "running":
                finish(paths, path.stem, "killed", error=why)
                ended.append(path.stem)
        except AgentTeamsError:  # not a record (a fork base, a file that does not parse)
            continue
    return ended


def unreported_of(paths: TeamPaths, parent: str, since_ms: int = 0) -> list[str]:
    """Ids of ``parent``'s subagents whose end it has not been told of: ended and never
    handed over, or still running (it is told when they end). A parent that starts again
    (a restart) takes these up, since which ones it waited for went with its memory. Only
    those started at ``since_ms`` or later: an earlier holder of its name's are not its."""
    folder = paths.team_dir / "subagents"
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            result = read(paths, path.stem)
        except AgentTeamsError:  # not a record (a fork base, a file that does not parse)
            continue
        if result.parent == parent and not result.notified and result.started_ms >= since_ms:
            found.append(result.id)
    return found


def mark_notified(paths: TeamPaths, result: SubagentResult) -> None:
    """Its parent has ``result``, or needs no notification of it (``result``'s run, the one
    that started at ``result.started_ms``): a run resumed since under the same id is left for
    its own notification."""
    read(paths, result.id)  # NotFound, before a lock file is made for a record gone with its team
    with locked(paths.subagent_result(result.id), root=paths.root):
        current = read(paths, result.id)
        if current.started_ms == result.started_ms and not current.notified:
            write(paths, msgspec.structs.replace(current, notified=True))


_ID_AT_END = re.compile(r"(?:^|-)(sub-[0-9a-f]+)$")


def parent_of(paths: TeamPaths, name: str) -> str | None:
    """The agent ``name`` works for, when it is a subagent (None when not): ``name`` is its id,
    or the name its usage is recorded under (``{parent}.{id}``, in a file name ``{parent}-{id}``)."""
    found = _ID_AT_END.search(name)
    if found is None:
        return None
    try:
        record = read(paths, found.group(1))
    except AgentTeamsError:  # no such subagent: an agent of its own that is named so
        return None
    if name not in (record.id, normalise_agent_name(f"{record.parent}.{record.id}")):
        return None
    return normalise_agent_name(record.parent)


def running_of(paths: TeamPaths, parent: str, settled: set[str]) -> list[str]:
    """Ids of ``parent``'s subagents still running. ``settled``, kept by the caller between
    looks, gathers the ids that can never be: ended, or another parent's. Their files are not
    read again, so a look costs what runs, not every subagent the team ever had."""
    folder = paths.team_dir / "subagents"
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if path.stem in settled:
            continue
        try:
            result = read(paths, path.stem)
        except AgentTeamsError:  # a file that does not parse is not a subagent of ours
            continue
        if result.parent != parent or result.status != "running":
            settled.add(path.stem)
        else:
            found.append(result.id)
    return found


def resumable(paths: TeamPaths, options: SubagentOptions, exiting: bool) -> SubagentResult:
    """The record of the ended subagent ``options.resume`` names, to go on from its sidechain
    under the same id; ``exiting``: its process has recorded its end but not yet gone."""
    record = read(paths, options.resume)
    if record.parent != options.parent:
        raise NotFound(f"{options.resume!r} is not a subagent of {options.parent!r}")
    if record.status == "running":
        raise Conflict(f"subagent {options.resume!r} is running: send it a message instead")
    if exiting:
        raise Conflict(f"subagent {options.resume!r} {STILL_ENDING}; resume it again in a moment")
    return record


def begin(paths: TeamPaths, record: SubagentResult, subagent: str, options: SubagentOptions) -> None:
    """Record ``subagent`` as running ``options`` (a resumed one keeps its earlier fields)."""
    write(
        paths,
        msgspec.structs.replace(
            record,
            id=subagent,
            description=options.description or record.description,
            prompt=options.prompt,
            agent_type=options.agent_type,
            status="running",
            result="",
            error="",
            background=options.background,
            notified=False,
            started_ms=now_ms(),
            ended_ms=0,
            name=options.name or record.name,
            tool_use_id=options.tool_use_id,
            inbox=[],
            fork=options.fork or record.fork,
            fork_call=record.fork_call or (options.tool_use_id if options.fork else ""),
        ),
    )


def write_fork_base(paths: TeamPaths, parent: str, tool_use_id: str, base: ForkBase) -> None:
    atomic_write(paths.fork_base(parent, tool_use_id), dump_json(base))


def read_fork_base(paths: TeamPaths, parent: str, tool_use_id: str) -> ForkBase:
    path = paths.fork_base(parent, tool_use_id)
    data = read_bytes(path)
    if data is None:
        raise NotFound(f"no fork base of {parent!r}'s call {tool_use_id!r} in team {paths.team!r}")
    with decode_errors(path, "fork base"):
        return _fork_decoder.decode(data)


def ask(paths: TeamPaths, subagent: str, request: PermissionRequest) -> None:
    """A running subagent's permission request, for its parent to answer (bubble)."""
    with locked(paths.subagent_result(subagent), root=paths.root):
        current = read(paths, subagent)
        write(paths, msgspec.structs.replace(current, asking=request, answer=None))


def answer(paths: TeamPaths, subagent: str, reply: BubbledAnswer) -> bool:
    """The parent's answer to the request its subagent is waiting on; False if it is not
    waiting on that one (answered already, withdrawn, or ended)."""
    with locked(paths.subagent_result(subagent), root=paths.root):
        current = read(paths, subagent)
        asking = current.asking
        if asking is None or asking.request_id != reply.request_id or current.answer is not None:
            return False
        write(paths, msgspec.structs.replace(current, answer=reply))
        return True


def take_answer(
    paths: TeamPaths, subagent: str, request_id: str, *, withdraw: bool = False
) -> BubbledAnswer | None:
    """The answer to ``request_id`` once given (the request is then closed); ``withdraw``:
    close it anyway (the subagent stopped waiting)."""
    with locked(paths.subagent_result(subagent), root=paths.root):
        current = read(paths, subagent)
        got = (
            current.answer if current.answer is not None and current.answer.request_id == request_id else None
        )
        if got is not None or (withdraw and current.asking is not None):
            write(paths, msgspec.structs.replace(current, asking=None, answer=None))
        return got


def to_background(paths: TeamPaths, subagent: str, by: str = "a person") -> SubagentResult:
    """Move a running synchronous subagent to the background: its parent stops waiting and
    hears of its result as a notification. It runs on as it was (nothing is run twice)."""
    read(paths, subagent)  # NotFound naming it, before a lock file is made for an unknown id
    with locked(paths.subagent_result(subagent), root=paths.root):
        current = read(paths, subagent)
        if current.status != "running":
            raise Conflict(f"subagent {subagent!r} is not running (it {current.status})")
        if not current.background:
            current = msgspec.structs.replace(current, background=True, moved_by=by)
            write(paths, current)
        return current


def checked_in(paths: TeamPaths, subagent: str) -> bool:
    """Count a check-in of its waiting parent's model (agentproc.checkins); False if it has
    ended meanwhile (no check-in then: its result is there)."""
    with locked(paths.subagent_result(subagent), root=paths.root):
        current = read(paths, subagent)
        if current.status != "running":
            return False
        write(paths, msgspec.structs.replace(current, check_ins=current.check_ins + 1))
        return True
