"""Per-message traces: when a message went out, when its recipient woke, when its turn began.

Off by default. With ``AGENTTEAMS_TRACE=1`` (or a file's absolute path) in a process's environment, senders record
``sent`` (before the inbox write), ``written`` and ``wake_sent`` (the doorbell), and an
agent records ``woke`` (its wait returned) and ``taken`` (the message handed to its turn),
each a line in ``teams/{team}/trace.jsonl`` keyed by the message's ``msg_id``. The demo,
``watch`` and the benchmarks read them back as latencies; nothing in the runtime depends
on them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import msgspec

from ipc.paths import TeamPaths
from ipc.settings import env
from ipc.storage import append_line, read_jsonl


class Stamp(msgspec.Struct, kw_only=True):
    msg_id: str
    agent: str
    stage: str
    ns: int


class Span(msgspec.Struct, kw_only=True):
    """One message's way, in ns since the epoch (0: not recorded)."""

    msg_id: str
    agent: str
    sent: int = 0
    written: int = 0
    wake_sent: int = 0
    woke: int = 0
    taken: int = 0

    @property
    def latency_ms(self) -> float:
        """Send → the recipient's turn starts (the message handed to its model)."""
        return (self.taken - self.sent) / 1e6 if self.sent and self.taken else math.nan


def enabled() -> bool:
    value = env("AGENTTEAMS_TRACE", "")
    return value in ("1", "true", "yes") or value.startswith("/")


def path(paths: TeamPaths) -> Path:
    """The team's ``trace.jsonl``, or the file ``AGENTTEAMS_TRACE`` names (an absolute
    path: traces that outlive the team, as the demo's lead deletes it)."""
    value = env("AGENTTEAMS_TRACE", "")
    return Path(value) if value.startswith("/") else paths.team_dir / "trace.jsonl"


def record(paths: TeamPaths, msg_id: str, agent: str, **stages: int) -> None:
    """Append one line per stage for ``msg_id`` (one write each)."""
    lines = b"\n".join(
        msgspec.json.encode(Stamp(msg_id=msg_id, agent=agent, stage=s, ns=ns)) for s, ns in stages.items()
    )
    append_line(path(paths), lines)


def spans(paths: TeamPaths) -> list[Span]:
    """Every traced message, in the order it was first seen."""
    joined: dict[str, dict[str, int]] = defaultdict(dict)
    agents: dict[str, str] = {}
    for stamp in read_jsonl(path(paths), Stamp):
        joined[stamp.msg_id][stamp.stage] = stamp.ns
        agents.setdefault(stamp.msg_id, stamp.agent)
    fields = set(Span.__struct_fields__)
    return [
        Span(msg_id=mid, agent=agents[mid], **{k: v for k, v in stages.items() if k in fields})
        for mid, stages in joined.items()
    ]


def percentiles(values: list[float]) -> dict[str, float]:
    """n, p50, p90, p99 and max (nearest rank) of ``values``."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return {"n": 0, "p50": math.nan, "p90": math.nan, "p99": math.nan, "max": math.nan}
    ordered = sorted(values)

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered))) - 1))]

    return {"n": len(ordered), "p50": rank(0.5), "p90": rank(0.9), "p99": rank(0.99), "max": ordered[-1]}
