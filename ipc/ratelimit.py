"""One rate limiter per team and model, shared by every process of the team.

A 429 (or rate-limit headers saying nothing is left) closes a gate until the time the API
gave (``retry-after``, or the ``anthropic-ratelimit-*-reset`` time); every agent of the team
waits at the gate before each request, so one teammate's 429 slows the whole team instead
of each teammate hammering on its own. The gate is a small file under a lock:
``teams/{team}/ratelimit/{model}.json`` holding the epoch second it opens.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

import msgspec

from ipc.locks import locked
from ipc.paths import TeamPaths
from ipc.storage import atomic_write, ensure_dir, read_bytes

MAX_WAIT = 300.0  # a gate never closes for longer than this (a bad header must not wedge us)
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


class Gate(msgspec.Struct, kw_only=True):
    opens_at: float = 0.0  # epoch seconds
    reason: str = ""


_gate = msgspec.json.Decoder(Gate)


def _read(path: Path) -> Gate:
    data = read_bytes(path)
    if not data:
        return Gate()
    try:
        return _gate.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return Gate()  # torn by a kill: an open gate is the safe reading


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the API asks us to wait, from ``retry-after-ms``/``retry-after`` (seconds or
    an HTTP date), or None if it does not say."""
    now = time.time() if now is None else now
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    if (value := headers.get("retry-after")) is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                return max(0.0, parsedate_to_datetime(value).timestamp() - now)
            except (TypeError, ValueError):
                return None
    return None


def exhausted_until(headers: Mapping[str, str]) -> float | None:
    """When a limit the headers report as used up resets (epoch seconds), or None."""
    latest = None
    for kind in ("requests", "tokens", "input-tokens", "output-tokens"):
        remaining = headers.get(f"anthropic-ratelimit-{kind}-remaining")
        reset = headers.get(f"anthropic-ratelimit-{kind}-reset")
        if remaining is None or reset is None or remaining.strip() != "0":
            continue
        try:
            at = datetime.fromisoformat(reset.replace("Z", "+00:00")).timestamp()
        except ValueError:
            continue
        latest = at if latest is None else max(latest, at)
    return latest


class RateLimiter:
    """The team's gate for one model."""

    def __init__(self, paths: TeamPaths, model: str, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.path = paths.team_dir / "ratelimit" / f"{_SAFE.sub('_', model)}.json"
        self.root = paths.root
        self.sleep = sleep
        self.waited = 0.0  # seconds this process spent at the gate

    def wait(self) -> None:
        """Return when the gate is open. After a closed gate, a random pause of up to a
        quarter second spreads the team's requests instead of releasing them at once."""
        while True:
            gate = _read(self.path)
            delay = min(gate.opens_at - time.time(), MAX_WAIT)
            if delay <= 0:
                return
            pause = delay + random.uniform(0.0, 0.25)
            self.waited += pause
            self.sleep(pause)

    def close_for(self, seconds: float, reason: str) -> None:
        self.close_until(time.time() + min(seconds, MAX_WAIT), reason)

    def close_until(self, opens_at: float, reason: str) -> None:
        """Close the gate until ``opens_at`` (never shortening a later closing)."""
        ensure_dir(self.path.parent)
        with locked(self.path, root=self.root):
            gate = _read(self.path)
            if opens_at > gate.opens_at:
                atomic_write(self.path, msgspec.json.encode(Gate(opens_at=opens_at, reason=reason)))

    def observe(self, headers: Mapping[str, str]) -> None:
        """Close the gate if a successful response's headers say a limit is used up."""
        until = exhausted_until(headers)
        if until is not None and until > time.time():
            self.close_until(min(until, time.time() + MAX_WAIT), "rate limit used up")


__all__ = ["Gate", "RateLimiter", "exhausted_until", "retry_after"]
