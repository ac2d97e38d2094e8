"""Subagent results on disk (``teams/{team}/subagents/{id}.json``): written by the subagent
(or, when it dies, by the supervisor), read by its parent. One small file each, replaced
whole."""

from __future__ import annotations

import msgspec

from ipc.boundary import decode_errors
from ipc.clock import now_ms
from ipc.errors import AgentTeamsError, NotFound
from ipc.paths import TeamPaths
from ipc.replies import SubagentResult, SubagentStatus
from ipc.schemas import dump_json
from ipc.storage import atomic_write, read_bytes

_decoder = msgspec.json.Decoder(SubagentResult)


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
    paths: TeamPaths, subagent: str, status: SubagentStatus, *, result: str = "", error: str = ""
) -> SubagentResult:
    """Record how a subagent ended (unless it already recorded it itself)."""
    current = read(paths, subagent)
    if current.status != "running":
        return current
    done = msgspec.structs.replace(current, status=status, result=result, error=error, ended_ms=now_ms())
    write(paths, done)
    return done


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
