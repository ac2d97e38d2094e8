"""Time in the formats Claude Code writes: epoch milliseconds and ISO 8601 UTC with ms and Z."""

from __future__ import annotations

import time
from datetime import UTC, datetime

_second: tuple[int, str] = (-1, "")  # the last second formatted, kept: the hot path asks often


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def iso_from_ms(ms: int) -> str:
    global _second
    second = ms // 1000
    if _second[0] != second:
        _second = (second, datetime.fromtimestamp(second, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S."))
    return f"{_second[1]}{ms % 1000:03d}Z"


def now_iso() -> str:
    return iso_from_ms(now_ms())
