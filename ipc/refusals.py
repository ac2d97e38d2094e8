"""Entries a reader refused (:mod:`ipc.trust`): logged, and kept for people in
``teams/{team}/refused.jsonl`` (``agentteams inbox`` marks them too)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import msgspec

from ipc.clock import now_iso
from ipc.errors import AgentTeamsError
from ipc.paths import TeamPaths
from ipc.schemas import InboxMessage
from ipc.storage import append_line, read_bytes

log = logging.getLogger("agentteams.trust")


def _opt(value: object) -> str | None:
    return value if isinstance(value, str) else None


class Refusal(msgspec.Struct, kw_only=True):
    """One refused entry, as ``refused.jsonl`` keeps it for people."""

    reader: str
    claimed_from: str
    msg_id: str | None
    reason: str
    timestamp: str
    text: str


def refused_path(paths: TeamPaths) -> Path:
    return paths.team_dir / "refused.jsonl"


def record_refusal(paths: TeamPaths, reader: str, message: InboxMessage, reason: str) -> Refusal:
    """Log a refused entry and keep a line for people (``agentteams inbox`` shows them)."""
    refusal = Refusal(
        reader=reader,
        claimed_from=message.from_,
        msg_id=_opt(message.msg_id),
        reason=reason,
        timestamp=now_iso(),
        text=message.text[:300],
    )
    log.warning("%s refused an entry claiming to be from %s: %s", reader, message.from_, reason)
    try:
        append_line(refused_path(paths), msgspec.json.encode(refusal))
    except AgentTeamsError as exc:  # the record is a courtesy; the refusal stands
        log.error("could not record a refusal: %s", exc.message)
    return refusal


def _quoted(value: object, limit: int = 64) -> str:
    """A value a forger chose, as the notice shows it: quoted, on one line, cut short, so it
    cannot pass for the notice's own words (it reaches the lead in a verified message)."""
    text = value if isinstance(value, str) else str(value)
    return json.dumps(text if len(text) <= limit else text[:limit] + "…", ensure_ascii=False)


def refusal_notice(refusal: Refusal) -> str:
    """What the lead is told of a refusal (the refused text is not repeated as if genuine;
    what the forger wrote in its fields is quoted)."""
    reason = " ".join(refusal.reason.split())
    reason = reason if len(reason) <= 300 else reason[:300] + "…"
    return (
        f"[refused] {refusal.reader} refused an entry claiming to be from {_quoted(refusal.claimed_from)} "
        f"(msg_id {_quoted(refusal.msg_id)}): {reason}. It was not acted on."
    )


def read_refusals(paths: TeamPaths) -> list[Refusal]:
    data = read_bytes(refused_path(paths)) or b""
    out = []
    for line in data.splitlines():
        try:
            out.append(msgspec.json.decode(line, type=Refusal))
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
    return out
