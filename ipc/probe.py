"""Latency probes: a message whose text carries its send time, recorded by the recipient's
loop at the moment the loop takes it. The demo and the benchmarks measure send → wake on
the real path (inbox write, doorbell, loop hand-off) with these, rather than assume it."""

from __future__ import annotations

import re
import time

import msgspec

from ipc.paths import TeamPaths
from ipc.storage import append_line, read_jsonl

PREFIX = "[latency-probe "
_PATTERN = re.compile(r"^\[latency-probe (\d+)\]")


class ProbeRecord(msgspec.Struct):
    agent: str
    sent_ns: int
    taken_ns: int

    @property
    def latency_ms(self) -> float:
        return (self.taken_ns - self.sent_ns) / 1e6


def probe_text(sent_ns: int | None = None) -> str:
    return f"{PREFIX}{time.time_ns() if sent_ns is None else sent_ns}]"


def sent_ns_of(text: str) -> int | None:
    match = _PATTERN.match(text)
    return int(match.group(1)) if match else None


def record(paths: TeamPaths, agent: str, sent_ns: int) -> None:
    taken = time.time_ns()
    append_line(paths.team_dir / "latency.jsonl", msgspec.json.encode(ProbeRecord(agent, sent_ns, taken)))


def records(paths: TeamPaths) -> list[ProbeRecord]:
    return read_jsonl(paths.team_dir / "latency.jsonl", ProbeRecord)


def percentiles(values: list[float]) -> dict[str, float]:
    """p50, p90, p99 and max (nearest rank) of ``values``."""
    if not values:
        return {"n": 0, "p50": float("nan"), "p90": float("nan"), "p99": float("nan"), "max": float("nan")}
    ordered = sorted(values)

    def rank(q: float) -> float:
        return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered))) - 1))]

    return {"n": len(ordered), "p50": rank(0.5), "p90": rank(0.9), "p99": rank(0.99), "max": ordered[-1]}
