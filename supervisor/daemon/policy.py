"""Restart policy, as OTP supervisors have it: restart on failure with exponential backoff,
at most ``intensity`` restarts within ``period`` seconds; past that, the child is failed."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ipc.launch import RestartMode


@dataclass(frozen=True)
class RestartPolicy:
    mode: RestartMode = "on-failure"
    intensity: int = 3
    period: float = 30.0
    backoff_initial: float = 0.1
    backoff_max: float = 5.0

    def next_delay(self, history: deque[float], now: float) -> float | None:
        """Seconds to wait before the next restart, or None to give up.

        ``history`` holds the times of earlier restarts; it is pruned to the period and the
        restart about to happen is recorded in it.
        """
        if self.mode == "never":
            return None
        while history and now - history[0] > self.period:
            history.popleft()
        if len(history) >= self.intensity:
            return None
        delay: float = min(self.backoff_initial * 2.0 ** len(history), self.backoff_max)
        history.append(now)
        return delay
