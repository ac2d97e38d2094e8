"""What the environment says about locks: which kind, how long a wait lasts, how long a
busy lock is retried before the waiter sleeps, and whether Claude Code's lock is taken. The
two durations are read at the first lock of a process and kept; a bad value of any is a
one-line error at every lock."""

from __future__ import annotations

import math
import os
from typing import Literal

from ipc.errors import StorageError
from ipc.settings import env

DEFAULT_LOCK_TIMEOUT = 30.0
DEFAULT_SPIN_US = 200.0  # some eight holds of an inbox's lock by an append (see ipc.locks._flock)
MAX_SPIN_US = 10_000.0  # a spin is a CPU kept busy: a longer wait should sleep
ClaudeLocks = Literal["auto", "always", "never"]
LockBackend = Literal["flock", "filelock"]


def _number_from_env(name: str, default: float, unit: str, *, zero_ok: bool, most: float = math.inf) -> float:
    value = env(name, "")
    try:
        number = float(value) if value else default
    except ValueError:
        raise StorageError(f"{name}={value!r}; use a number of {unit}") from None
    if math.isnan(number) or number < 0 or (number == 0 and not zero_ok) or number > most:
        least = "0" if zero_ok else "a positive number of"
        limit = f" to {most:g}" if math.isfinite(most) else (" or more" if zero_ok else "")
        raise StorageError(f"{name}={value!r}; use {least}{limit} {unit}")
    return number


_lock_timeout: float | None = None  # from the environment at the first lock, unless set
_spin: float | None = None


def default_timeout() -> float:
    """``AGENTTEAMS_LOCK_TIMEOUT``: seconds a lock wait lasts before LockTimeout (default 30)."""
    global _lock_timeout
    if _lock_timeout is None:
        _lock_timeout = _number_from_env(
            "AGENTTEAMS_LOCK_TIMEOUT", DEFAULT_LOCK_TIMEOUT, "seconds", zero_ok=False
        )
    return _lock_timeout


def set_default_lock_timeout(seconds: float) -> None:
    """This process's lock timeout (the default 30 s covers a stale Claude Code lock)."""
    global _lock_timeout
    _lock_timeout = seconds


def spin_seconds() -> float:
    """``AGENTTEAMS_LOCK_SPIN_US``: how long a busy flock is retried at once before the
    waiter sleeps; 200 µs by default where this process may run on more than one CPU, else
    0 (on one CPU a waiter that spins only keeps the holder from running)."""
    global _spin
    if _spin is None:
        default = DEFAULT_SPIN_US if len(os.sched_getaffinity(0)) > 1 else 0.0
        _spin = (
            _number_from_env(
                "AGENTTEAMS_LOCK_SPIN_US", default, "microseconds", zero_ok=True, most=MAX_SPIN_US
            )
            / 1e6
        )
    return _spin


def lock_backend() -> LockBackend:
    """``AGENTTEAMS_LOCK``: flock (the default) or filelock (the filelock package's locks)."""
    value = env("AGENTTEAMS_LOCK", "flock")
    if value not in ("flock", "filelock"):
        raise StorageError(f"AGENTTEAMS_LOCK={value!r}; use flock or filelock")
    return value  # type: ignore[return-value]


def claude_locks_setting() -> ClaudeLocks:
    """``AGENTTEAMS_CLAUDE_LOCKS``: whether Claude Code's lock is taken too (see ipc.locks)."""
    value = env("AGENTTEAMS_CLAUDE_LOCKS", "auto")
    if value not in ("auto", "always", "never"):
        raise StorageError(f"AGENTTEAMS_CLAUDE_LOCKS={value!r}; use auto, always or never")
    return value  # type: ignore[return-value]
